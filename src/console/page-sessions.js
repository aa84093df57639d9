import { html, useEffect, useState } from '/console/vendor/htm-preact.js'
import { del, get, seg } from './api.js'
import { useStatus } from './events.js'
import { Notice, PageHead, ago, bdi, shown, useLoad, useTick } from './ui.js'

function Counts ({ title, counts, empty }) {
  const entries = Object.entries(counts ?? {}).sort((a, b) => b[1] - a[1])
  return html`<div class="card counts"><h2>${title}</h2>
    ${entries.length === 0 ? html`<p class="muted">none</p>` : html`<dl>${entries.map(([k, v]) => html`<dt>${k === '' ? empty : bdi(k)}</dt><dd>${v}</dd>`)}</dl>`}</div>`
}

export function SessionsPage () {
  const list = useLoad(() => get('/admin/sessions?limit=500'))
  const status = useStatus()
  const now = useTick(1000)
  const [note, setNote] = useState({ error: null, ok: null })
  const total = status?.sessions?.total
  // The live status carries only counts: when they move, fetch the list again.
  useEffect(() => { if (total !== undefined && list.data !== null && total !== list.data.total) list.reload() }, [total])

  const end = async (session) => {
    setNote({ error: null, ok: null })
    try {
      await del(`/admin/sessions/${seg(session.ref)}`)
      setNote({ error: null, ok: `Ended the session of ${shown(session.principal)} (${session.ref}).` })
      list.reload()
    } catch (error) { setNote({ error, ok: null }) }
  }

  const view = list.data
  return html`
    <${PageHead} title="Sessions"><button type="button" onClick=${list.reload}>Refresh</button></${PageHead}>
    <${Notice} error=${list.error ?? note.error} ok=${note.ok} />
    ${view
      ? html`
        <p><strong>${view.total}</strong> ${view.total === 1 ? 'session' : 'sessions'} on this replica${view.truncated ? ` (showing ${view.sessions.length})` : ''}.</p>
        <div class="cards">
          <${Counts} title="By transport" counts=${view.byTransport} />
          <${Counts} title="By endpoint" counts=${view.byEndpoint} empty="/mcp" />
          <${Counts} title="By principal" counts=${view.byPrincipal} />
        </div>
        <div class="scroll"><table class="grid" aria-label="Sessions">
          <thead><tr><th scope="col">Ref</th><th scope="col">Principal</th><th scope="col">Endpoint</th><th scope="col">Transport</th><th scope="col">Protocol</th>
            <th scope="col">Client</th><th scope="col" class="num">Age</th><th scope="col" class="num">Last activity</th><th scope="col" class="num">In flight</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
          <tbody>${(view.sessions ?? []).map(s => html`
            <tr key=${s.ref} data-session=${s.ref}>
              <td><code>${s.ref}</code></td><th scope="row">${bdi(s.principal)}</th><td>${s.endpoint === null ? '/mcp' : `/mcp/${s.endpoint}`}</td>
              <td>${s.transport}</td><td>${bdi(s.protocolVersion)}</td><td>${s.client === null || s.client === undefined ? html`<span class="muted">—</span>` : bdi(s.client)}</td>
              <td class="num">${ago(s.openedAt, now)}</td><td class="num">${ago(s.lastActivityAt, now)} ago</td><td class="num">${s.inFlight}</td>
              <td><button type="button" class="danger" onClick=${() => end(s)} aria-label=${`End session ${s.ref} of ${shown(s.principal)}`}>End</button></td>
            </tr>`)}</tbody>
        </table></div>
        ${view.sessions?.length === 0 ? html`<p class="muted">No client is connected.</p>` : null}`
      : null}`
}
