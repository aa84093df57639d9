import { html, useState } from '/console/vendor/htm-preact.js'
import { post } from './api.js'
import { SchemaForm } from './schema-form.js'
import { Notice, bdi, pretty, shown } from './ui.js'

function Block ({ block }) {
  if (block?.type === 'text') return html`<pre class="out">${bdi(block.text, { multiline: true })}</pre>`
  if (block?.type === 'image' && typeof block.data === 'string' && /^image\/(png|jpeg|gif|webp)$/.test(block.mimeType ?? '')) {
    return html`<img class="out-img" alt="image result" src=${`data:${block.mimeType};base64,${block.data}`} />`
  }
  return html`<pre class="out muted">${pretty(block)}</pre>`
}

export function CallResult ({ answer }) {
  if (answer === null) return null
  if (answer.error !== undefined) {
    return html`<div class="result bad" role="status" aria-live="polite">
      <h4>JSON-RPC error ${answer.error.code}</h4><pre class="out">${bdi(answer.error.message, { multiline: true })}</pre>
      ${answer.error.data !== undefined ? html`<pre class="out muted">${pretty(answer.error.data)}</pre>` : null}</div>`
  }
  const result = answer.result ?? {}
  const content = Array.isArray(result.content) ? result.content : []
  return html`<div class=${`result ${result.isError ? 'bad' : 'good'}`} role="status" aria-live="polite">
    <h4>${result.isError ? 'Tool error' : 'Result'}</h4>
    ${content.map((block, i) => html`<${Block} key=${i} block=${block} />`)}
    ${result.structuredContent !== undefined ? html`<h5>structuredContent</h5><pre class="out">${pretty(result.structuredContent)}</pre>` : null}
    <details><summary>Raw result</summary><pre class="out">${pretty(result)}</pre></details>
  </div>`
}

/** Calls one tool as a chosen principal through POST /admin/tools/call. */
export function TryIt ({ tool, endpoint, principals, principal: chosen }) {
  const [principal, setPrincipal] = useState(chosen || principals[0]?.id || '')
  const [busy, setBusy] = useState(false)
  const [answer, setAnswer] = useState(null)
  const [error, setError] = useState(null)
  const prefix = `try-${tool.name}`.replace(/[^A-Za-z0-9_-]/g, '_')

  const call = async (args) => {
    setBusy(true)
    setError(null)
    setAnswer(null)
    try {
      const body = { principal, tool: tool.name, arguments: args }
      if (endpoint) body.endpoint = endpoint
      setAnswer(await post('/admin/tools/call', body))
    } catch (err) { setError(err) } finally { setBusy(false) }
  }

  return html`
    <section class="try" aria-label=${`Try ${shown(tool.name)}`}>
      <div class="field">
        <label for=${`${prefix}-principal`}>Call as principal</label>
        ${principals.length > 0
          ? html`<select id=${`${prefix}-principal`} value=${principal} onChange=${e => setPrincipal(e.currentTarget.value)}>
              ${principals.map(p => html`<option value=${p.id}>${shown(p.id)}${p.roles?.length ? ` (${shown(p.roles.join(', '))})` : ''}</option>`)}</select>`
          : html`<input id=${`${prefix}-principal`} type="text" value=${principal} onInput=${e => setPrincipal(e.currentTarget.value)} />`}
        <span class="help">Policy, rate limits, guards, approval and audit apply as for any call by this principal.</span>
      </div>
      <${SchemaForm} idPrefix=${prefix} inputSchema=${tool.inputSchema} onSubmit=${call} busy=${busy} />
      <${Notice} error=${error} />
      <${CallResult} answer=${answer} />
    </section>`
}
