import { html, useState } from '/console/vendor/htm-preact.js'
import { ApiError, get, post } from './api.js'
import { Notice, PageHead, errorText, pretty, useLoad } from './ui.js'

function Names ({ title, names, kind }) {
  return html`<div class=${`card diffcard ${kind}`}><h3>${title} <span class="muted">(${names?.length ?? 0})</span></h3>
    ${names?.length ? html`<ul>${names.map(n => html`<li><code>${n}</code></li>`)}</ul>` : html`<p class="muted">none</p>`}</div>`
}

function Outcome ({ result, heading }) {
  if (result === null) return null
  if (result.outcome === 'invalid' || result.outcome === 'error') {
    return html`<section class="result bad" aria-label=${heading} aria-live="polite"><h2>${heading}: ${result.outcome}</h2><p>${result.message}</p>
      <ul>${(result.errors ?? []).map(e => html`<li><code>${e.path ?? ''}</code> ${e.message}</li>`)}</ul></section>`
  }
  return html`
    <section class="reload" aria-label=${heading} aria-live="polite">
      <h2>${heading}</h2>
      <div class="cards">
        <${Names} title="Upstreams added" names=${result.added} kind="add" />
        <${Names} title="Upstreams removed" names=${result.removed} kind="del" />
        <${Names} title="Upstreams changed (reconnect)" names=${result.changed} kind="mod" />
        <${Names} title="Sections applied" names=${result.applied} kind="" />
        <${Names} title="Need a restart" names=${result.restartRequired} kind=${result.restartRequired?.length ? 'warn' : ''} />
      </div>
      ${result.message ? html`<p class="notice">${result.message}</p>` : null}
    </section>`
}

/** A reload's answer, also when it is a 400/500 that says what was wrong. */
async function reloadCall (run) {
  try { return await run() } catch (err) {
    if (err instanceof ApiError && err.body?.outcome !== undefined) return err.body
    throw err
  }
}

export function ConfigPage () {
  const config = useLoad(() => get('/admin/config'))
  const [preview, setPreview] = useState(null)
  const [applied, setApplied] = useState(null)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState(null)

  const act = async (run, keep) => {
    setBusy(true)
    setError(null)
    try { keep(await reloadCall(run)) } catch (err) { setError(err) } finally { setBusy(false) }
  }
  const doPreview = () => { setApplied(null); return act(() => get('/admin/reload/preview'), setPreview) }
  const doApply = () => act(() => post('/admin/reload'), (result) => { setApplied(result); setPreview(null); config.reload() })

  return html`
    <${PageHead} title="Config">
      <button type="button" onClick=${doPreview} disabled=${busy}>Preview reload</button>
      <button type="button" class="primary" onClick=${doApply} disabled=${busy || preview === null || preview.outcome !== 'preview'}
        title=${preview === null ? 'Preview the reload first' : ''}>Apply reload</button>
    </${PageHead}>
    <p class="muted">The config in force, secrets redacted. A reload reads the config file again; preview it first to see what it would change (nothing is applied until you press Apply).</p>
    <${Notice} error=${config.error ?? error} />
    <${Outcome} result=${preview} heading="Reload preview (nothing applied yet)" />
    <${Outcome} result=${applied} heading="Reload applied" />
    ${config.data ? html`<h2>In force</h2><pre class="code block" tabindex="0" aria-label="The config in force">${pretty(config.data)}</pre>` : null}
    ${config.error ? html`<p class="muted">${errorText(config.error)}</p>` : null}`
}
