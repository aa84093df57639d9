import { html, useCallback, useEffect, useState } from '/console/vendor/htm-preact.js'
import { visibleText } from './visible-text.js'

// Small pieces every page uses: loading data, showing an error, formatting times, showing text.

/**
 * Text from a client, an upstream or a token as a string safe to read: bidirectional, zero-width
 * and control characters written out as \u{XXXX} (the gateway's own visibleText, served by it).
 * For attributes (aria-label) and sentences; in markup use `bdi`.
 */
export function shown (text, options) {
  return text === null || text === undefined ? '' : visibleText(String(text), options)
}

/** The same text isolated in `<bdi>`, so even a right-to-left name cannot reorder the line around it. */
export function bdi (text, options) {
  return html`<bdi>${shown(text, options)}</bdi>`
}

/** Loads `load()` now and whenever `deps` change; `reload()` loads again. */
export function useLoad (load, deps = []) {
  const [state, setState] = useState({ data: null, error: null, loading: true })
  const run = useCallback(() => {
    let live = true
    setState(s => ({ ...s, loading: true }))
    load().then(
      data => { if (live) setState({ data, error: null, loading: false }) },
      error => { if (live) setState(s => ({ data: s.data, error, loading: false })) }
    )
    return () => { live = false }
  }, deps)
  useEffect(run, [run])
  return { ...state, reload: run }
}

export function errorText (error) {
  if (error === null || error === undefined) return ''
  const body = error.body
  if (body !== undefined && body !== null && Array.isArray(body.errors)) {
    return `${body.message ?? error.message}: ${body.errors.map(e => `${e.path ?? ''} ${e.message ?? ''}`.trim()).join('; ')}`
  }
  return error.status === undefined ? String(error.message ?? error) : `${error.message} (HTTP ${error.status})`
}

export function Notice ({ error, ok }) {
  if (error !== null && error !== undefined) return html`<p class="notice error" role="alert">${shown(errorText(error))}</p>`
  if (ok) return html`<p class="notice ok" role="status">${ok}</p>`
  return null
}

export function PageHead ({ title, children }) {
  useEffect(() => { document.title = `${title} · Switchboard` }, [title])
  return html`<div class="page-head"><h1>${title}</h1><div class="actions">${children}</div></div>`
}

export function Badge ({ kind, children }) {
  return html`<span class=${`badge ${kind ?? ''}`}>${children}</span>`
}

export function ago (ms, now = Date.now()) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '—'
  const s = Math.max(0, Math.round((now - ms) / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`
}

export function clock (ms) {
  const d = new Date(ms)
  return Number.isNaN(d.getTime()) ? '—' : d.toLocaleTimeString(undefined, { hour12: false })
}

export function when (iso) {
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? String(iso ?? '—') : d.toLocaleString(undefined, { hour12: false })
}

/** JSON for reading: JSON.stringify leaves bidirectional and zero-width characters raw, so they are escaped too. */
export const pretty = (value) => shown(JSON.stringify(value, null, 2), { multiline: true })

/** Re-renders every `ms` so relative times ("12s ago") stay true between events. */
export function useTick (ms = 1000) {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), ms)
    return () => clearInterval(timer)
  }, [ms])
  return now
}
