import { html, useState } from '/console/vendor/htm-preact.js'
import { del, get, seg } from './api.js'
import { Notice, PageHead, bdi, shown, useLoad } from './ui.js'

export function ConnectionsPage () {
  const list = useLoad(() => get('/admin/connections?principals=1'))
  const [note, setNote] = useState({ error: null, ok: null })

  const revoke = async (upstream, principal) => {
    setNote({ error: null, ok: null })
    try {
      await del(`/admin/connections/${seg(upstream)}/${seg(principal)}`)
      setNote({ error: null, ok: `Revoked ${shown(principal)}'s connection to ${shown(upstream)}; they connect again on next use.` })
      list.reload()
    } catch (error) { setNote({ error, ok: null }) }
  }

  const groups = list.data?.upstreams ?? []
  return html`
    <${PageHead} title="Connections"><button type="button" onClick=${list.reload}>Refresh</button></${PageHead}>
    <p class="muted">Upstream credentials users granted through the connect flow (per-user OAuth and the like), by upstream. Revoking deletes the stored grant; no token is ever shown.</p>
    <${Notice} error=${list.error ?? note.error} ok=${note.ok} />
    ${list.data && groups.length === 0 ? html`<p class="muted">No upstream holds a per-user connection.</p>` : null}
    ${groups.length > 0
      ? html`<div class="scroll"><table class="grid" aria-label="Upstream connections">
        <thead><tr><th scope="col">Upstream</th><th scope="col">Type</th><th scope="col" class="num">Connections</th><th scope="col">Principal</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
        <tbody>${groups.flatMap(g => (g.principals?.length ? g.principals : [null]).map(p => html`
          <tr><th scope="row">${bdi(g.upstream)}</th><td>${g.type}</td><td class="num">${g.connections}</td><td>${p === null ? html`<span class="muted">—</span>` : bdi(p)}</td>
            <td>${p === null ? null : html`<button type="button" class="danger" onClick=${() => revoke(g.upstream, p)} aria-label=${`Revoke ${shown(p)} at ${shown(g.upstream)}`}>Revoke</button>`}</td></tr>`))}</tbody>
      </table></div>`
      : null}`
}
