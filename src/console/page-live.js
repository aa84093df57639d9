import { html, useState } from '/console/vendor/htm-preact.js'
import { MAX_CALLS, useCalls } from './events.js'
import { Badge, PageHead, bdi, clock, shown } from './ui.js'

const OUTCOME_KIND = { ok: 'ok', tool_error: 'warn' }

function options (calls, key) {
  return [...new Set(calls.map(c => c[key]).filter(v => v !== undefined && v !== ''))].sort()
}

function Filter ({ id, label, value, set, values }) {
  return html`<div class="field"><label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${e => set(e.currentTarget.value)}>
      <option value="">all</option>${values.map(v => html`<option value=${v}>${shown(v)}</option>`)}</select></div>`
}

export function LivePage () {
  const calls = useCalls()
  const [frozen, setFrozen] = useState(null)
  const [principal, setPrincipal] = useState('')
  const [upstream, setUpstream] = useState('')
  const [tool, setTool] = useState('')
  const [outcome, setOutcome] = useState('')
  const shown = frozen ?? calls
  const newer = frozen === null ? 0 : Math.max(0, (calls[0]?.seq ?? 0) - (frozen[0]?.seq ?? 0))
  const rows = shown.filter(c =>
    (principal === '' || c.principal === principal) &&
    (upstream === '' || c.upstream === upstream) &&
    (tool === '' || c.tool.toLowerCase().includes(tool.toLowerCase())) &&
    (outcome === '' || c.outcome === outcome))

  return html`
    <${PageHead} title="Live">
      <button type="button" aria-pressed=${frozen !== null} onClick=${() => setFrozen(frozen === null ? calls : null)}>${frozen === null ? 'Pause' : 'Resume'}</button>
    </${PageHead}>
    <form class="toolbar" onSubmit=${e => e.preventDefault()} aria-label="Filters">
      <${Filter} id="live-principal" label="Principal" value=${principal} set=${setPrincipal} values=${options(shown, 'principal')} />
      <${Filter} id="live-upstream" label="Upstream" value=${upstream} set=${setUpstream} values=${options(shown, 'upstream')} />
      <div class="field"><label for="live-tool">Tool contains</label><input id="live-tool" type="search" value=${tool} onInput=${e => setTool(e.currentTarget.value)} /></div>
      <${Filter} id="live-outcome" label="Outcome" value=${outcome} set=${setOutcome} values=${options(shown, 'outcome')} />
    </form>
    <p class="muted small" role="status">${frozen !== null ? `Paused: ${newer} newer calls not shown. ` : ''}Showing ${rows.length} of the last ${shown.length} calls (at most ${MAX_CALLS} are kept).</p>
    <div class="scroll"><table class="grid" aria-label="Calls">
      <thead><tr><th scope="col">Time</th><th scope="col">Principal</th><th scope="col">Endpoint</th><th scope="col">Tool</th><th scope="col">Upstream</th><th scope="col">Outcome</th><th scope="col" class="num">Duration</th></tr></thead>
      <tbody>${rows.map(c => html`
        <tr key=${c.seq} data-call=${c.callId}>
          <td>${clock(c.at)}</td><td>${bdi(c.principal)}</td><td>${c.endpoint ? `/mcp/${c.endpoint}` : '/mcp'}</td>
          <th scope="row"><code>${bdi(c.tool)}</code></th><td>${c.upstream ? bdi(c.upstream) : html`<span class="muted">—</span>`}</td>
          <td><${Badge} kind=${OUTCOME_KIND[c.outcome] ?? 'bad'}>${c.outcome}</${Badge}></td><td class="num">${Math.round(c.durationMs)} ms</td>
        </tr>`)}</tbody>
    </table></div>
    ${shown.length === 0 ? html`<p class="muted">No call has finished since this page connected. Calls appear here as they end.</p>` : null}`
}
