import { html, useState } from '/console/vendor/htm-preact.js'
import { get, query } from './api.js'
import { TryIt } from './try-it.js'
import { Badge, Notice, PageHead, bdi, shown, useLoad } from './ui.js'

const HINTS = [['readOnlyHint', 'read-only', 'ok'], ['destructiveHint', 'destructive', 'bad'], ['idempotentHint', 'idempotent', ''], ['openWorldHint', 'open world', '']]
const PIN_KIND = { pinned: 'ok', changed: 'warn', held: 'bad' }

function Annotations ({ annotations }) {
  if (!annotations) return null
  return HINTS.filter(([key]) => annotations[key] === true).map(([, label, kind]) => html`<${Badge} kind=${kind}>${label}</${Badge}> `)
}

function Findings ({ findings }) {
  if (!findings?.length) return null
  return html`<ul class="findings">${findings.map(f => html`<li><${Badge} kind="bad">${f.kind ?? f.rule}</${Badge}> ${bdi(f.detail ?? f.reason)}${f.path ? html` <code>${bdi(f.path)}</code>` : null}</li>`)}</ul>`
}

function ToolRow ({ tool, open, toggle, endpoint, principals, principal }) {
  return html`
    <tr data-tool=${tool.name}>
      <th scope="row"><code>${bdi(tool.name)}</code>${tool.title ? html`<div class="muted small">${bdi(tool.title)}</div>` : null}</th>
      <td>${bdi(tool.upstream)}</td>
      <td class="desc">${bdi(tool.description ?? '', { multiline: true })}<${Findings} findings=${tool.findings} /></td>
      <td><${Annotations} annotations=${tool.annotations} /></td>
      <td>${tool.pin ? html`<${Badge} kind=${PIN_KIND[tool.pin]}>${tool.pin}</${Badge}>` : html`<span class="muted">—</span>`}</td>
      ${tool.score !== undefined ? html`<td class="num">${tool.score.toFixed(2)}</td>` : null}
      <td><button type="button" aria-expanded=${open} onClick=${toggle} aria-label=${`Try ${shown(tool.name)}`}>${open ? 'Close' : 'Try it'}</button></td>
    </tr>
    ${open
      ? html`<tr class="detail"><td colspan=${tool.score !== undefined ? 7 : 6}>
          <${TryIt} tool=${tool} endpoint=${endpoint} principals=${principals} principal=${principal} /></td></tr>`
      : null}`
}

function Others ({ view }) {
  const resources = view.resources.length + view.templates.length
  return html`
    <h2>Prompts <span class="muted">(${view.prompts.length})</span></h2>
    ${view.prompts.length > 0 && html`<table class="grid" aria-label="Prompts">
      <thead><tr><th scope="col">Name</th><th scope="col">Upstream</th><th scope="col">Description</th><th scope="col">Arguments</th></tr></thead>
      <tbody>${view.prompts.map(p => html`<tr><th scope="row"><code>${bdi(p.name)}</code></th><td>${bdi(p.upstream)}</td><td>${bdi(p.description ?? '', { multiline: true })}</td>
        <td>${bdi((p.arguments ?? []).map(a => a?.name).filter(Boolean).join(', '))}</td></tr>`)}</tbody></table>`}
    <h2>Resources <span class="muted">(${resources})</span></h2>
    ${resources > 0 && html`<table class="grid" aria-label="Resources">
      <thead><tr><th scope="col">URI</th><th scope="col">Name</th><th scope="col">Upstream</th><th scope="col">Type</th></tr></thead>
      <tbody>${view.resources.map(r => html`<tr><th scope="row"><code>${bdi(r.uri)}</code></th><td>${bdi(r.name)}</td><td>${bdi(r.upstream)}</td><td>${bdi(r.mimeType)}</td></tr>`)}
        ${view.templates.map(r => html`<tr><th scope="row"><code>${bdi(r.uriTemplate)}</code></th><td>${bdi(r.name)}</td><td>${bdi(r.upstream)}</td><td>template</td></tr>`)}</tbody></table>`}`
}

export function CatalogPage () {
  const [endpoint, setEndpoint] = useState('')
  const [principal, setPrincipal] = useState('')
  const [text, setText] = useState('')
  const [q, setQ] = useState('')
  const [open, setOpen] = useState(null)
  const principals = useLoad(() => get('/admin/principals'))
  const catalog = useLoad(() => get(`/admin/catalog${query({ endpoint, principal, q })}`), [endpoint, principal, q])
  const view = catalog.data
  const people = principals.data?.principals ?? []
  const ranked = q !== ''
  const search = (event) => { event.preventDefault(); setQ(text.trim()) }

  return html`
    <${PageHead} title="Catalog" />
    <form class="toolbar" onSubmit=${search} role="search">
      <div class="field"><label for="cat-endpoint">Endpoint</label>
        <select id="cat-endpoint" value=${endpoint} onChange=${e => setEndpoint(e.currentTarget.value)}>
          <option value="">/mcp</option>
          ${(view?.endpoints ?? []).map(name => html`<option value=${name}>/mcp/${name}</option>`)}
        </select></div>
      <div class="field"><label for="cat-principal">As seen by</label>
        <select id="cat-principal" value=${principal} onChange=${e => setPrincipal(e.currentTarget.value)}>
          <option value="">everything (no policy)</option>
          ${people.map(p => html`<option value=${p.id}>${shown(p.id)}</option>`)}
        </select></div>
      <div class="field grow"><label for="cat-q">Search tools</label>
        <input id="cat-q" type="search" value=${text} placeholder="words, as search_tools ranks them" onInput=${e => setText(e.currentTarget.value)} /></div>
      <button type="submit" class="primary">Search</button>
      ${ranked ? html`<button type="button" onClick=${() => { setText(''); setQ('') }}>Clear</button>` : null}
    </form>
    <${Notice} error=${catalog.error ?? principals.error} />
    ${view
      ? html`
        <h2>Tools <span class="muted">(${view.tools.length}${ranked ? ` matching “${shown(q)}”` : ''})</span></h2>
        <div class="scroll"><table class="grid" aria-label="Tools">
          <thead><tr><th scope="col">Name</th><th scope="col">Upstream</th><th scope="col">Description</th><th scope="col">Annotations</th><th scope="col">Pin</th>
            ${ranked ? html`<th scope="col" class="num">Score</th>` : null}<th scope="col"><span class="sr">Actions</span></th></tr></thead>
          <tbody>${view.tools.map(tool => html`<${ToolRow} key=${tool.name} tool=${tool} open=${open === tool.name}
            toggle=${() => setOpen(open === tool.name ? null : tool.name)} endpoint=${endpoint} principals=${people} principal=${principal} />`)}</tbody>
        </table></div>
        ${ranked ? null : html`<${Others} view=${view} />`}`
      : catalog.loading ? html`<p class="muted">Loading…</p>` : null}`
}
