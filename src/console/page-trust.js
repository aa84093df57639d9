import { html, useState } from '/console/vendor/htm-preact.js'
import { get, post } from './api.js'
import { diffLines } from './line-diff.js'
import { Badge, Notice, PageHead, bdi, pretty, shown, useLoad, when } from './ui.js'

const short = (fingerprint) => typeof fingerprint === 'string' ? fingerprint.slice(0, 12) : '—'
const STATE_KIND = { pinned: 'ok', changed: 'warn', held: 'bad' }

function Diff ({ before, after, label }) {
  if (before == null && after == null) return html`<p class="muted">Neither definition is available from this gateway.</p>`
  const rows = diffLines(before == null ? '' : pretty(before), after == null ? '' : pretty(after))
  const changes = rows.filter(r => r.kind !== 'same').length
  return html`
    <table class="diff" aria-label=${label}>
      <caption class="sr">${label}: ${changes} lines differ</caption>
      <colgroup><col class="ln" /><col /><col class="ln" /><col /></colgroup>
      <thead><tr><th scope="col" colspan="2">Pinned (approved)</th><th scope="col" colspan="2">New (pending)</th></tr></thead>
      <tbody>${rows.map(r => html`
        <tr class=${r.kind}>
          <td class="ln">${r.leftNo ?? ''}</td><td class=${`l ${r.kind === 'del' || r.kind === 'mod' ? 'minus' : ''}`}>${bdi(r.left)}</td>
          <td class="ln">${r.rightNo ?? ''}</td><td class=${`r ${r.kind === 'add' || r.kind === 'mod' ? 'plus' : ''}`}>${bdi(r.right)}</td>
        </tr>`)}</tbody>
    </table>`
}

function Findings ({ findings }) {
  if (!findings?.length) return null
  return html`<div><h4>Scan findings</h4><ul class="findings">${findings.map(f => html`
    <li><${Badge} kind="bad">${f.rule ?? f.kind}</${Badge}> ${bdi(f.reason ?? f.detail)} ${f.path ? html`<code>${bdi(f.path)}</code>` : null}</li>`)}</ul></div>`
}

function HeldTool ({ upstream, tool, approve, busy }) {
  const pending = tool.pending
  return html`
    <article class="card held" data-tool=${`${upstream}/${tool.tool}`} aria-labelledby=${`held-${upstream}-${tool.tool}`}>
      <header class="row">
        <h3 id=${`held-${upstream}-${tool.tool}`}><code>${bdi(`${upstream}/${tool.tool}`)}</code></h3>
        <${Badge} kind=${STATE_KIND[tool.state]}>${tool.state}</${Badge}>
        ${pending ? html`<span class="muted small">held by ${pending.heldBy}, seen ${when(pending.seenAt)}</span>` : null}
        <span class="grow"></span>
        <button type="button" class="primary" disabled=${busy} onClick=${() => approve(upstream, tool.tool)} aria-label=${`Approve ${shown(`${upstream}/${tool.tool}`)}`}>Approve</button>
      </header>
      <p class="muted small">pinned <code title=${tool.fingerprint ?? ''}>${short(tool.fingerprint)}</code>${tool.pinnedAt ? ` at ${when(tool.pinnedAt)}` : ''} → pending <code title=${pending?.fingerprint ?? ''}>${short(pending?.fingerprint)}</code></p>
      <${Findings} findings=${pending?.findings} />
      <${Diff} before=${tool.definition} after=${pending?.definition} label=${`Definition diff of ${shown(`${upstream}/${tool.tool}`)}`} />
    </article>`
}

export function TrustPage () {
  const pins = useLoad(() => get('/admin/pins'))
  const [busy, setBusy] = useState(false)
  const [note, setNote] = useState({ error: null, ok: null })
  const [showAll, setShowAll] = useState(false)

  const approve = async (upstream, tool) => {
    setBusy(true)
    setNote({ error: null, ok: null })
    try {
      const outcome = await post('/admin/pins/approve', { upstream, tools: [tool] })
      const names = (outcome?.approved ?? []).map(a => `${a.upstream}/${a.tool}`).join(', ')
      setNote({ error: null, ok: `Approved ${shown(names || `${upstream}/${tool}`)}: it is pinned and served again.` })
      pins.reload()
    } catch (error) { setNote({ error, ok: null }) } finally { setBusy(false) }
  }

  const view = pins.data
  const upstreams = view?.upstreams ?? []
  const held = upstreams.flatMap(u => u.tools.filter(t => t.pending !== undefined || t.state !== 'pinned').map(t => ({ upstream: u.upstream, tool: t })))
  const pinnedCount = upstreams.reduce((a, u) => a + u.tools.length, 0)
  return html`
    <${PageHead} title="Trust">
      <button type="button" onClick=${pins.reload}>Refresh</button>
    </${PageHead}>
    ${view ? html`<p class="muted">Pinning <strong>${view.pinning}</strong>, scanning <strong>${view.scanning}</strong>${view.store ? html`, store <code>${view.store}</code>` : null}. ${pinnedCount} tool definitions on record.</p>` : null}
    <${Notice} error=${pins.error?.status === 409 ? null : (pins.error ?? note.error)} ok=${note.ok} />
    ${pins.error?.status === 404 ? html`<p class="muted">Pinning and scanning are off on this gateway.</p>` : null}
    <h2>Held or changed <span class="muted">(${held.length})</span></h2>
    ${held.length === 0 && view ? html`<p class="muted">Nothing is held: every tool is served as approved.</p>` : null}
    ${held.map(h => html`<${HeldTool} key=${`${h.upstream}/${h.tool.tool}`} upstream=${h.upstream} tool=${h.tool} approve=${approve} busy=${busy} />`)}
    <div class="row"><input id="trust-all" type="checkbox" checked=${showAll} onChange=${e => setShowAll(e.currentTarget.checked)} /><label for="trust-all">Show every pinned tool</label></div>
    ${showAll
      ? html`<table class="grid" aria-label="Pinned tools"><thead><tr><th scope="col">Upstream</th><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Fingerprint</th><th scope="col">Pinned at</th></tr></thead>
        <tbody>${upstreams.flatMap(u => u.tools.map(t => html`<tr><td>${bdi(u.upstream)}${u.inConfig ? '' : html` <span class="muted small">(not configured)</span>`}</td><th scope="row"><code>${bdi(t.tool)}</code></th>
          <td><${Badge} kind=${STATE_KIND[t.state]}>${t.state}</${Badge}></td><td><code>${t.fingerprint ?? '—'}</code></td><td>${t.pinnedAt ? when(t.pinnedAt) : '—'}</td></tr>`))}</tbody></table>`
      : null}`
}
