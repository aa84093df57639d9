import { html, useState } from '/console/vendor/htm-preact.js'
import { get, post, seg } from './api.js'
import { useStatus } from './events.js'
import { Sparkline } from './sparkline.js'
import { Badge, Notice, PageHead, ago, bdi, clock, shown, useLoad, useTick } from './ui.js'

const STATE_KIND = { ready: 'ok', connecting: 'warn', backoff: 'bad', closed: 'bad', awaiting_user: 'warn' }
const CIRCUIT_KIND = { closed: 'ok', half_open: 'warn', open: 'bad' }

/** Before the first `status` event, the same data from the plain API. */
async function firstLook () {
  const [upstreams, stats] = await Promise.all([get('/admin/upstreams'), get('/admin/stats').catch(() => null)])
  return { upstreams: upstreams.upstreams, stats, sessions: null }
}

export function OverviewPage () {
  const live = useStatus()
  const initial = useLoad(firstLook)
  const now = useTick(1000)
  const [note, setNote] = useState({ error: null, ok: null })
  const view = live ?? initial.data
  const upstreams = view?.upstreams ?? []
  const minutes = new Map((view?.stats?.upstreams ?? []).map(s => [s.upstream, s.minutes]))

  const reconnect = async (name) => {
    setNote({ error: null, ok: null })
    try {
      await post(`/admin/upstreams/${seg(name)}/reconnect`)
      setNote({ error: null, ok: `Reconnecting ${shown(name)}…` })
    } catch (error) { setNote({ error, ok: null }) }
  }

  const ready = upstreams.filter(u => u.state === 'ready').length
  const sessions = view?.sessions
  return html`
    <${PageHead} title="Overview" />
    <section class="summary" aria-label="Summary">
      <div><strong>${ready}/${upstreams.length}</strong> upstreams ready</div>
      <div><strong>${upstreams.reduce((a, u) => a + (u.tools ?? 0), 0)}</strong> tools</div>
      <div><strong>${upstreams.reduce((a, u) => a + (u.inFlight ?? 0), 0)}</strong> calls in flight</div>
      ${sessions ? html`<div><strong>${sessions.total}</strong> sessions</div>` : null}
      ${live ? html`<div><strong>${live.pendingApprovals ?? 0}</strong> approvals waiting</div>` : null}
    </section>
    <${Notice} error=${initial.error ?? note.error} ok=${note.ok} />
    <div class="scroll">
      <table class="grid" aria-label="Upstreams">
        <thead><tr>
          <th scope="col">Upstream</th><th scope="col">State</th><th scope="col">Transport</th><th scope="col">Protocol</th>
          <th scope="col" class="num">Tools</th><th scope="col" class="num">In flight</th><th scope="col">Breaker</th>
          <th scope="col" class="num">Reconnects</th><th scope="col">Last error</th><th scope="col">Calls · p95 (15 min)</th><th scope="col"><span class="sr">Actions</span></th>
        </tr></thead>
        <tbody>
          ${upstreams.map(u => html`
            <tr key=${u.name} data-upstream=${u.name}>
              <th scope="row">${bdi(u.name)}</th>
              <td><${Badge} kind=${STATE_KIND[u.state] ?? ''}>${u.state}</${Badge}>
                <span class="muted small"> for ${ago(u.stateSince, now)}</span></td>
              <td>${u.transport}${u.isolation && u.isolation !== 'shared' ? html`<span class="muted small"> · ${u.isolation}</span>` : null}</td>
              <td>${u.protocolVersion ? bdi(u.protocolVersion) : '—'}</td>
              <td class="num">${u.tools}</td>
              <td class="num">${u.inFlight}</td>
              <td><${Badge} kind=${CIRCUIT_KIND[u.circuit] ?? ''}>${u.circuit ?? '—'}</${Badge}></td>
              <td class="num">${u.reconnects}</td>
              <td class="error-cell">${u.lastError === undefined || u.lastError === null
                ? html`<span class="muted">—</span>`
                : html`${bdi(u.lastError, { multiline: true })}${u.state !== 'ready' && u.stateSince ? html`<div class="muted small">since ${clock(u.stateSince)}</div>` : null}`}</td>
              <td><${Sparkline} upstream=${u.name} minutes=${minutes.get(u.name)} /></td>
              <td><button type="button" onClick=${() => reconnect(u.name)} aria-label=${`Reconnect ${shown(u.name)}`}>Reconnect</button></td>
            </tr>`)}
        </tbody>
      </table>
    </div>
    ${upstreams.length === 0 && !initial.loading ? html`<p class="muted">No upstreams are configured.</p>` : null}
    <p class="muted small legend"><span class="key calls"></span> calls per minute <span class="key p95"></span> p95 latency; each line on its own scale.</p>`
}
