import { html, useEffect, useState } from '/console/vendor/htm-preact.js'
import { get, post, seg } from './api.js'
import { useStatus } from './events.js'
import { Notice, PageHead, bdi, pretty, shown, useLoad, when } from './ui.js'

export function ApprovalsPage () {
  const list = useLoad(() => get('/admin/approvals'))
  const status = useStatus()
  const [reasons, setReasons] = useState({})
  const [note, setNote] = useState({ error: null, ok: null })
  const waiting = status?.pendingApprovals
  useEffect(() => { if (waiting !== undefined && list.data !== null && waiting !== list.data.approvals.length) list.reload() }, [waiting])

  const decide = async (item, decision) => {
    setNote({ error: null, ok: null })
    const reason = reasons[item.id]?.trim()
    try {
      const outcome = await post(`/admin/approvals/${seg(item.id)}`, reason ? { decision, reason } : { decision })
      setNote({ error: null, ok: `${decision === 'approve' ? 'Approved' : 'Denied'} ${shown(item.tool)} for ${shown(item.principal)} (${outcome?.outcome ?? decision}).` })
      list.reload()
    } catch (error) { setNote({ error, ok: null }) }
  }

  const off = list.error?.status === 404
  const items = list.data?.approvals ?? []
  return html`
    <${PageHead} title="Approvals"><button type="button" onClick=${list.reload}>Refresh</button></${PageHead}>
    <p class="muted">Calls a policy rule sent to an operator (<code>effect: ask</code>, <code>approval.via: operator</code>). Each waits until decided or until it times out (a denial).</p>
    <${Notice} error=${off ? null : (list.error ?? note.error)} ok=${note.ok} />
    ${off ? html`<p class="muted">Operator approvals are not in use on this gateway.</p>` : null}
    ${!off && list.data && items.length === 0 ? html`<p class="muted">No call is waiting for approval.</p>` : null}
    ${items.map(item => html`
      <article class="card" key=${item.id} aria-labelledby=${`ap-${item.id}`}>
        <header class="row"><h3 id=${`ap-${item.id}`}><code>${bdi(item.tool)}</code></h3><span class="muted small">upstream ${bdi(item.upstream)} · principal <strong>${bdi(item.principal)}</strong> · rule ${bdi(item.rule)} · asked ${when(item.askedAt)} · waits until ${when(item.waitsUntil)}</span></header>
        <pre class="code block" aria-label="Arguments (redacted)">${bdi(pretty(item.arguments), { multiline: true })}</pre>
        <div class="row">
          <div class="field grow"><label for=${`reason-${item.id}`}>Reason (optional, goes to the audit log)</label>
            <input id=${`reason-${item.id}`} type="text" maxlength="1000" value=${reasons[item.id] ?? ''} onInput=${e => setReasons({ ...reasons, [item.id]: e.currentTarget.value })} /></div>
          <button type="button" class="primary" onClick=${() => decide(item, 'approve')} aria-label=${`Approve ${shown(item.tool)} for ${shown(item.principal)}`}>Approve</button>
          <button type="button" class="danger" onClick=${() => decide(item, 'deny')} aria-label=${`Deny ${shown(item.tool)} for ${shown(item.principal)}`}>Deny</button>
        </div>
      </article>`)}`
}
