// The soak's figures: requests and outcomes, errors by class, for each fault the longest window of
// errors after it, the longest time the cluster answered nothing, crossed and unanswered requests,
// and each replica's RSS slope; judged against the hard targets (exit code) and the soft ones
// (PASS/WARN). Printed as tables and written as JSON.
import type { Checker } from './checker.ts'
import type { Fault } from './chaos.ts'
import { MIN_REQUESTS_FOR_VERDICT, type RssSlope } from './rss.ts'

/** Errors less than this apart belong to one window (a replica refusing a third of the calls is one window, not many). */
export const WINDOW_GAP_MS = 1_000
export const SOFT_ERROR_WINDOW_MS = 2_000
export const SOFT_SILENT_MS = 1_000
export const SOFT_RSS_MB_PER_100K = 5

export interface Meta { date: string, commit: string, seconds: number, sessions: number, replicas: number, node: string, loadMs: number }
export interface Window { from: number, to: number, ms: number, errors: number, classes: Record<string, number>, replicas: Record<string, number> }
export interface FaultRow { kind: string, target: string, at: number, overAfterMs: number, errorsUntilNext: number, unansweredMet: number, longestWindow: Window | undefined, verdict: 'PASS' | 'WARN', detail?: string }

export interface Report {
  meta: Meta
  requests: number
  answered: number
  errors: number
  crossed: number
  unanswered: number
  byOp: Record<string, unknown>
  errorClasses: Array<{ class: string, count: number, ops: Record<string, number>, sample: string }>
  faults: FaultRow[]
  beforeFirstFault: { errors: number, unanswered: number, longestWindow: Window | undefined }
  silence: { longestNoAnswerMs: number, atMs: number, longestNoSuccessMs: number, noSuccessAtMs: number, silentSeconds: number, verdict: 'PASS' | 'WARN' }
  rss: Array<RssSlope & { verdict: 'PASS' | 'WARN' | 'n/a' }>
  notes: Record<string, number>
  errorsByReplica: Record<string, number>
  crossedSamples: unknown[]
  /** Per second of the run: [second, successful answers, errors], to look at a fault closer. */
  timeline: Array<[number, number, number]>
  unansweredSamples: unknown[]
  hard: 'PASS' | 'FAIL'
}

export function buildReport (checker: Checker, faults: Fault[], rss: RssSlope[], meta: Meta): Report {
  const errorTimes = [...checker.errorTimes].sort((a, b) => a.at - b.at)
  const windows = windowsOf(errorTimes)
  const unansweredFault = checker.unansweredSpans.map(span => faultMet(faults, span))
  const rows: FaultRow[] = faults.map((f, i) => {
    const until = faults[i + 1]?.at ?? Infinity
    const mine = windows.filter(w => w.from >= f.at && w.from < until)
    const longest = mine.reduce<Window | undefined>((a, w) => (a === undefined || w.ms > a.ms ? w : a), undefined)
    return {
      kind: f.kind,
      target: f.target,
      at: f.at,
      overAfterMs: f.over - f.at,
      errorsUntilNext: errorTimes.filter(e => e.at >= f.at && e.at < until).length,
      unansweredMet: unansweredFault.filter(k => k === i).length,
      longestWindow: longest,
      verdict: longest === undefined || longest.ms <= SOFT_ERROR_WINDOW_MS ? 'PASS' : 'WARN',
      ...(f.detail === undefined ? {} : { detail: f.detail })
    }
  })
  const first = faults[0]?.at ?? Infinity
  const before = windows.filter(w => w.from < first)
  // Up to the end of the load, not of its drain: the last requests finish after it and nothing new is sent.
  const silence = silenceOf(checker.okTimes, errorTimes.map(e => e.at), Math.min(meta.loadMs, meta.seconds * 1000))
  const errors = [...checker.ops.values()].reduce((n, s) => n + s.errors, 0)
  return {
    meta,
    requests: checker.requests,
    answered: checker.answered,
    errors,
    crossed: checker.crossedCount,
    unanswered: checker.unansweredCount,
    byOp: Object.fromEntries(checker.ops),
    errorClasses: [...checker.errors].sort((a, b) => b[1].count - a[1].count).map(([cls, e]) => ({ class: cls, count: e.count, ops: e.ops as Record<string, number>, sample: e.sample })),
    faults: rows,
    beforeFirstFault: { errors: errorTimes.filter(e => e.at < first).length, unanswered: unansweredFault.filter(k => k === -1).length, longestWindow: before.reduce<Window | undefined>((a, w) => (a === undefined || w.ms > a.ms ? w : a), undefined) },
    silence: { ...silence, verdict: silence.longestNoAnswerMs < SOFT_SILENT_MS ? 'PASS' : 'WARN' },
    rss: rss.map(r => ({ ...r, verdict: r.mbPer100k === undefined || r.requests < MIN_REQUESTS_FOR_VERDICT ? 'n/a' : Math.abs(r.mbPer100k) <= SOFT_RSS_MB_PER_100K ? 'PASS' : 'WARN' })),
    notes: Object.fromEntries(checker.notes),
    errorsByReplica: Object.fromEntries([...checker.errorsByReplica].sort()),
    crossedSamples: checker.crossed,
    timeline: perSecond(checker.okTimes, errorTimes.map(e => e.at), meta.loadMs),
    unansweredSamples: checker.unanswered,
    hard: checker.crossedCount === 0 && checker.unansweredCount === 0 ? 'PASS' : 'FAIL'
  }
}

/**
 * The fault an unanswered request met: the first that began while it was pending (from the send of its
 * call to its deadline), else the last one before it; -1 for none.
 */
function faultMet (faults: Fault[], span: { from: number, to: number }): number {
  const during = faults.findIndex(f => f.at >= span.from && f.at <= span.to)
  if (during !== -1) return during
  return faults.reduce((found, f, i) => (f.at < span.from ? i : found), -1)
}

/** Errors grouped into windows: a gap of WINDOW_GAP_MS or more without an error ends a window. */
function windowsOf (errors: Array<{ at: number, cls: string, by?: string }>): Window[] {
  const out: Window[] = []
  let current: Window | undefined
  for (const e of errors) {
    if (current === undefined || e.at - current.to >= WINDOW_GAP_MS) {
      current = { from: e.at, to: e.at, ms: 0, errors: 0, classes: {}, replicas: {} }
      out.push(current)
    }
    current.to = e.at
    current.ms = current.to - current.from
    current.errors++
    current.classes[e.cls] = (current.classes[e.cls] ?? 0) + 1
    current.replicas[e.by ?? '-'] = (current.replicas[e.by ?? '-'] ?? 0) + 1
  }
  return out
}

/** The longest stretch without any answer (result or error), and without a successful one, from the first answer to the end of the load. */
function silenceOf (ok: number[], errors: number[], loadMs: number): Omit<Report['silence'], 'verdict'> {
  // Only what came within the load: during the drain after it, nothing new is sent.
  const within = (t: number): boolean => t <= loadMs
  const okWithin = ok.filter(within)
  const any = mergeSorted(okWithin, errors.filter(within))
  const gap = (times: number[]): { ms: number, at: number } => {
    let best = { ms: 0, at: 0 }
    for (let i = 1; i <= times.length; i++) {
      const from = times[i - 1] as number
      const to = i < times.length ? times[i] as number : loadMs
      if (to - from > best.ms) best = { ms: to - from, at: from }
    }
    return best
  }
  const silent = new Set<number>()
  for (let s = 0; s < Math.floor(loadMs / 1000); s++) silent.add(s)
  for (const t of any) silent.delete(Math.floor(t / 1000))
  const a = gap(any)
  const o = gap(okWithin)
  return { longestNoAnswerMs: a.ms, atMs: a.at, longestNoSuccessMs: o.ms, noSuccessAtMs: o.at, silentSeconds: silent.size }
}

function perSecond (ok: number[], errors: number[], loadMs: number): Array<[number, number, number]> {
  const rows = Array.from({ length: Math.ceil(loadMs / 1000) + 1 }, (_, s): [number, number, number] => [s, 0, 0])
  for (const t of ok) (rows[Math.floor(t / 1000)] as [number, number, number])[1]++
  for (const t of errors) (rows[Math.floor(t / 1000)] as [number, number, number])[2]++
  return rows
}

function mergeSorted (a: number[], b: number[]): number[] {
  const out: number[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (j >= b.length || (i < a.length && (a[i] as number) <= (b[j] as number))) out.push(a[i++] as number)
    else out.push(b[j++] as number)
  }
  return out
}

function table (headers: string[], rows: Array<Array<string | number>>): string {
  const cells = rows.map(r => r.map(String))
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map(r => (r[i] ?? '').length)))
  const line = (r: string[]): string => r.map((c, i) => i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)).join('  ').trimEnd()
  return [line(headers), line(widths.map(w => '-'.repeat(w))), ...cells.map(line)].join('\n')
}

function topClasses (w: Window | undefined): string {
  if (w === undefined) return ''
  return Object.entries(w.classes).sort((a, b) => b[1] - a[1]).slice(0, 2).map(([c, n]) => `${c} ×${n}`).join('; ')
}

function byReplica (w: Window | undefined): string {
  if (w === undefined) return ''
  return Object.entries(w.replicas).sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ${n}`).join(', ')
}

export function formatReport (r: Report): string {
  const out: string[] = []
  out.push(`Switchboard soak — ${r.meta.date}, commit ${r.meta.commit}, ${r.meta.seconds} s, ${r.meta.replicas} replicas, ${r.meta.sessions} sessions, node ${r.meta.node}`)
  out.push('')
  out.push(table(['requests', 'answered', 'errors', 'error %', 'crossed', 'unanswered', 'hard targets'], [[r.requests, r.answered, r.errors, (100 * r.errors / Math.max(1, r.requests)).toFixed(2), r.crossed, r.unanswered, r.hard]]))
  out.push('')
  out.push(table(['operation', 'sent', 'ok', 'errors', 'crossed', 'unanswered'], Object.entries(r.byOp).map(([op, s]) => {
    const x = s as { sent: number, ok: number, errors: number, crossed: number, unanswered: number }
    return [op, x.sent, x.ok, x.errors, x.crossed, x.unanswered]
  })))
  out.push('')
  out.push(r.errorClasses.length === 0
    ? 'errors by class: none'
    : table(['error class', 'count', 'operations', 'sample'], r.errorClasses.map(e => [e.class, e.count, Object.entries(e.ops).map(([o, n]) => `${o} ${n}`).join(', '), e.sample.replace(/\s+/g, ' ').slice(0, 70)])))
  out.push(`errors by the replica that answered them (- : none did): ${Object.entries(r.errorsByReplica).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`)
  out.push('')
  out.push(table(['fault', 'target', 'at s', 'done after ms', 'errors till next', 'unanswered it met', 'longest error window ms', 'its errors', 'answered by', 'mostly', `≤ ${SOFT_ERROR_WINDOW_MS} ms`], [
    ['(before any fault)', '', '', '', r.beforeFirstFault.errors, r.beforeFirstFault.unanswered, r.beforeFirstFault.longestWindow?.ms ?? 0, r.beforeFirstFault.longestWindow?.errors ?? 0, byReplica(r.beforeFirstFault.longestWindow), topClasses(r.beforeFirstFault.longestWindow), ''],
    ...r.faults.map(f => [f.kind, f.target, (f.at / 1000).toFixed(1), f.overAfterMs, f.errorsUntilNext, f.unansweredMet, f.longestWindow?.ms ?? 0, f.longestWindow?.errors ?? 0, byReplica(f.longestWindow), topClasses(f.longestWindow), f.verdict])
  ]))
  out.push('')
  const s = r.silence
  out.push(`longest time the cluster answered nothing: ${s.longestNoAnswerMs} ms (from ${(s.atMs / 1000).toFixed(1)} s) — ${s.verdict} (target < ${SOFT_SILENT_MS} ms); whole seconds without any answer: ${s.silentSeconds}`)
  out.push(`longest time without a successful answer: ${s.longestNoSuccessMs} ms (from ${(s.noSuccessAtMs / 1000).toFixed(1)} s)`)
  out.push('')
  out.push(`RSS slope judged from ${MIN_REQUESTS_FOR_VERDICT} requests on (n/a below: one garbage collection would dominate it)`)
  out.push(table(['replica', 'pid', 'samples', 'requests', 'RSS first MB', 'last MB', 'peak MB', 'MB per 100k requests', `|slope| ≤ ${SOFT_RSS_MB_PER_100K}`], r.rss.map(x => [x.name, x.pid, x.samples, x.requests, x.firstMb, x.lastMb, x.peakMb, x.mbPer100k ?? 'n/a', x.verdict])))
  if (Object.keys(r.notes).length > 0) {
    out.push('')
    out.push(table(['note', 'count'], Object.entries(r.notes).sort().map(([k, v]) => [k, v])))
  }
  for (const [what, list] of [['crossed', r.crossedSamples], ['unanswered', r.unansweredSamples]] as const) {
    if (list.length === 0) continue
    out.push('')
    out.push(`${what} (first ${list.length}):`)
    for (const x of list) out.push(`  ${JSON.stringify(x)}`)
  }
  out.push('')
  out.push(`hard targets (crossed 0, unanswered 0): ${r.hard}`)
  return out.join('\n')
}
