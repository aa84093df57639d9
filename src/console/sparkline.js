import { html } from '/console/vendor/htm-preact.js'

const WIDTH = 120
const HEIGHT = 28

function points (values, max) {
  const step = values.length > 1 ? WIDTH / (values.length - 1) : WIDTH
  return values.map((v, i) => `${(i * step).toFixed(1)},${(HEIGHT - 2 - (v / max) * (HEIGHT - 4)).toFixed(1)}`).join(' ')
}

/**
 * Calls per minute (solid) and p95 latency (dashed) over the stats window, each on its own scale:
 * the shape is what an operator reads here; the numbers are in the label and the title.
 */
export function Sparkline ({ upstream, minutes }) {
  if (!Array.isArray(minutes) || minutes.length === 0) return html`<span class="muted">no data</span>`
  const calls = minutes.map(m => m.calls)
  const p95 = minutes.map(m => m.p95Ms ?? 0)
  const total = calls.reduce((a, b) => a + b, 0)
  const errors = minutes.reduce((a, m) => a + m.errors, 0)
  const worst = Math.round(Math.max(...p95))
  const label = `${upstream}: ${total} calls, ${errors} errors, worst p95 ${worst} ms in the last ${minutes.length} minutes`
  return html`<span class="sparkcell">
    <svg class="spark" width=${WIDTH} height=${HEIGHT} viewBox=${`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label=${label}>
      <title>${label}</title>
      <polyline class="calls" fill="none" points=${points(calls, Math.max(1, ...calls))} />
      <polyline class="p95" fill="none" points=${points(p95, Math.max(1, worst))} />
    </svg><span class="small muted" aria-hidden="true">${total} · ${worst} ms</span></span>`
}
