// The targets of issue 14, each judged from this run: the measured value, met or NOT met, or "not
// measured" when what it needs was not selected (or gave no result). CPU targets are read at 64
// calls in flight; differences between paths use the same driver on both sides.
import type { CatalogResult } from './catalog.ts'
import { IDLE_UPSTREAMS, type IdleResult } from './idle.ts'
import { TREE_TARGET_RATIO } from './idle-tree.ts'
import type { PeerRatio } from './report-sections.ts'
import { driversOf, type PathLetter, type Selectable } from './settings.ts'
import { fmt, table, type PathSummary } from './summary.ts'
import { withDriver, type DriverKind, type PathId } from './target.ts'

/** A path with one driver, or a section of the run. */
type Need = readonly [PathLetter, DriverKind] | 'supergateway' | 'mcp-proxy' | 'catalog' | 'idle'

interface Spec {
  key: string
  target: string
  cmp: '≤' | '≥'
  limit: number
  unit: string
  digits: number
  needs: Need[]
  value: () => number | undefined
  /** Where the value comes from, when it is not obvious (the worst peer, when it settled). */
  detail?: () => string | undefined
  /**
   * Why the value is not the settled one: `upper`, it can only be higher (met still holds, NOT met
   * is not sure); `unsure`, it may be lower than the truth, so it judges nothing.
   */
  caveat?: () => { kind: 'upper' | 'unsure', why: string } | undefined
}

export interface TargetResult {
  target: string
  limit: string
  value?: number
  unit: string
  measured: string
  /** true / false when measured; undefined when not. */
  met?: boolean
  verdict: string
  detail?: string
}

export interface TargetInputs {
  paths: ReadonlySet<Selectable>
  summaries: PathSummary[]
  peers: PeerRatio[]
  catalog: CatalogResult[]
  idle?: IdleResult
}

const CATALOG_TARGET_TOOLS = 10_000

/** The name of what is missing from the selection, or undefined when everything needed is selected. */
function missing (paths: ReadonlySet<Selectable>, needs: Need[]): string | undefined {
  for (const need of needs) {
    if (typeof need === 'string') {
      if (!paths.has(need)) return need
    } else if (!driversOf(paths, need[0]).includes(need[1])) {
      return need[0] === 'c' && need[1] === 'lean' ? 'c or lean' : need[0]
    }
  }
  return undefined
}

function specs (x: TargetInputs): Spec[] {
  const by = (id: PathId, kind: DriverKind): PathSummary | undefined => x.summaries.find(s => s.path === withDriver(id, kind))
  const c64Cpu = (id: PathId, kind: DriverKind): number | undefined => by(id, kind)?.byPhase.c64?.proxyCpuUs
  const minus = (a: number | undefined, b: number | undefined): number | undefined => a === undefined || b === undefined ? undefined : a - b
  const peersOf = (kind: DriverKind): PeerRatio[] => x.peers.filter(p => p.driver === kind)
  const worst = (kind: DriverKind, f: (p: PeerRatio) => number, pick: 'max' | 'min'): PeerRatio | undefined =>
    peersOf(kind).filter(p => Number.isFinite(f(p))).reduce<PeerRatio | undefined>((w, p) => w === undefined || (pick === 'max' ? f(p) > f(w) : f(p) < f(w)) ? p : w, undefined)
  const peerNeeds: Need[] = ['supergateway', 'mcp-proxy']
  const catalog = x.catalog.find(r => r.tools === CATALOG_TARGET_TOOLS)
  const idle = x.idle
  const out: Spec[] = []
  for (const [kind, limit] of [['lean', 100], ['sdk', 150]] as const) {
    const driver = kind === 'lean' ? 'lean driver' : 'SDK client'
    out.push({ key: `gatewayCpuC64_${kind}`, target: `gateway CPU per call at c64, ${driver} (c)`, cmp: '≤', limit, unit: 'µs', digits: 1, needs: [['c', kind]], value: () => c64Cpu('gateway', kind) })
  }
  for (const kind of ['lean', 'sdk'] as const) {
    const w = worst(kind, p => p.cpuPerCallC64, 'max')
    out.push({
      key: `peerCpuShareC64_${kind}`,
      target: `gateway ÷ every peer's CPU per call at c64, ${kind === 'lean' ? 'lean driver' : 'SDK client'}`,
      cmp: '≤',
      limit: 1 / 3,
      unit: '×',
      digits: 2,
      needs: [['c', kind], ...peerNeeds],
      value: () => w?.cpuPerCallC64,
      detail: () => w === undefined ? undefined : `worst: ${w.peer}`
    })
  }
  const best = worst('lean', p => p.c64CallsPerSec, 'min')
  out.push({ key: 'callsVsBestPeerC64_lean', target: 'gateway ÷ best peer\'s calls/s at c64, lean driver', cmp: '≥', limit: 2, unit: '×', digits: 2, needs: [['c', 'lean'], ...peerNeeds], value: () => best?.c64CallsPerSec, detail: () => best === undefined ? undefined : `best peer: ${best.peer}` })
  out.push({ key: 'httpUpstreamCpuC64_lean', target: 'gateway CPU per call at c64, Streamable HTTP upstream, lean (h)', cmp: '≤', limit: 150, unit: 'µs', digits: 1, needs: [['h', 'lean']], value: () => c64Cpu('gateway-http', 'lean') })
  for (const kind of ['lean', 'sdk'] as const) {
    out.push({ key: `addedP50_${kind}`, target: `added seq p50 over direct stdio, ${kind === 'lean' ? 'lean drivers (c − a)' : 'SDK client (c − a)'}`, cmp: '≤', limit: 0.5, unit: 'ms', digits: 3, needs: [['c', kind], ['a', kind]], value: () => minus(by('gateway', kind)?.seqP50Ms, by('direct-stdio', kind)?.seqP50Ms) })
  }
  out.push({
    key: 'idleRss10Upstreams',
    target: `idle RSS, ${IDLE_UPSTREAMS} stdio upstreams, settled`,
    cmp: '≤',
    limit: 80,
    unit: 'MiB',
    digits: 1,
    needs: ['idle'],
    value: () => idle?.upstreams?.settled?.mb,
    detail: () => idle?.upstreams === undefined ? undefined : `${fmt(idle.upstreams.rssAtReadyMb, 1)} MiB at ready; settled at ${fmt(idle.upstreams.settled?.atS, 0)} s`,
    caveat: () => idle?.upstreams?.settled?.reducerAtS === undefined ? { kind: 'upper', why: 'the memory reducer did not run' } : undefined
  })
  // Issue 30: the whole tree (gateway + upstream processes) with ten lazy upstreams at rest.
  out.push({ key: 'lazyIdleTree', target: `process tree RSS, ${IDLE_UPSTREAMS} lazy stdio upstreams idle ÷ gateway alone`, cmp: '≤', limit: TREE_TARGET_RATIO, unit: '×', digits: 2, needs: ['idle'], value: () => idle?.trees?.ratio, detail: () => idle?.trees?.lazy === undefined || idle.trees.alone === undefined ? undefined : `${fmt(idle.trees.lazy.mb, 1)} ÷ ${fmt(idle.trees.alone.mb, 1)} MiB; 10 eager: ${fmt(idle.trees.eager?.mb, 1)} MiB` })
  out.push({ key: 'sessionKb', target: 'memory per open session', cmp: '≤', limit: 10, unit: 'KiB', digits: 2, needs: ['idle'], value: () => idle?.sessions?.perSessionKb, detail: () => idle?.sessions === undefined ? undefined : `${idle.sessions.opened} sessions`, caveat: () => sessionsCaveat(idle) })
  out.push({ key: 'catalogFirstPage10k', target: 'first tools/list page over 10,000 tools, p50', cmp: '≤', limit: 2, unit: 'ms', digits: 2, needs: ['catalog'], value: () => catalog?.firstPage.p50Ms })
  // Issue 15: search_tools on a discovery: search endpoint over the same catalog.
  out.push({ key: 'searchTools10k', target: 'search_tools over 10,000 tools, p50 (issue 15)', cmp: '≤', limit: 5, unit: 'ms', digits: 2, needs: ['catalog'], value: () => catalog?.search?.p50Ms })
  for (const kind of ['lean', 'sdk'] as const) {
    const driver = kind === 'lean' ? 'lean driver' : 'SDK client'
    out.push({ key: `securedAddedCpuC64_${kind}`, target: `auth+policy+limit+audit: added CPU per call at c64, ${driver} (d − c)`, cmp: '≤', limit: 30, unit: 'µs', digits: 1, needs: [['d', kind], ['c', kind]], value: () => minus(c64Cpu('gateway-secured', kind), c64Cpu('gateway', kind)) })
  }
  for (const kind of ['lean', 'sdk'] as const) {
    const driver = kind === 'lean' ? 'lean driver' : 'SDK client'
    out.push({ key: `redisAddedP50_${kind}`, target: `sessions in Redis: added seq p50, ${driver} (e − c)`, cmp: '≤', limit: 0.2, unit: 'ms', digits: 3, needs: [['e', kind], ['c', kind]], value: () => minus(by('gateway-redis', kind)?.seqP50Ms, by('gateway', kind)?.seqP50Ms) })
  }
  return out
}

/**
 * The sessions' RSS difference is sound only from a settled "before": from an unsettled one (young
 * generation still grown) it comes out too low; to an unsettled "after", too high.
 */
function sessionsCaveat (idle: IdleResult | undefined): ReturnType<NonNullable<Spec['caveat']>> {
  const s = idle?.sessions
  if (s === undefined) return undefined
  if (s.before?.reducerAtS === undefined) return { kind: 'unsure', why: 'the memory reducer did not run before the sessions' }
  if (s.after?.reducerAtS === undefined) return { kind: 'upper', why: 'the memory reducer did not run after the sessions' }
  return undefined
}

export function evaluateTargets (x: TargetInputs): Record<string, TargetResult> {
  const out: Record<string, TargetResult> = {}
  for (const s of specs(x)) {
    const limit = `${s.cmp} ${Number.isInteger(s.limit * 10) ? String(s.limit) : fmt(s.limit, 2)} ${s.unit}`
    const absent = missing(x.paths, s.needs)
    const value = absent === undefined ? s.value() : undefined
    if (value === undefined || !Number.isFinite(value)) {
      out[s.key] = { target: s.target, limit, unit: s.unit, measured: '-', verdict: absent !== undefined ? `not measured (path ${absent} not selected)` : 'not measured (no result; see the log)' }
      continue
    }
    const met = s.cmp === '≤' ? value <= s.limit : value >= s.limit
    const caveat = s.caveat?.()
    const measured = `${fmt(value, s.digits)} ${s.unit}`
    const notes = [s.detail?.(), caveat?.why].filter(x => x !== undefined)
    const detail = notes.length === 0 ? undefined : notes.join('; ')
    if (caveat?.kind === 'unsure' || (caveat?.kind === 'upper' && !met)) {
      const verdict = caveat.kind === 'unsure' ? 'not measured (not settled)' : 'NOT met? (an upper bound)'
      out[s.key] = { target: s.target, limit, value, unit: s.unit, measured, verdict, detail }
      continue
    }
    out[s.key] = { target: s.target, limit, value, unit: s.unit, measured, met, verdict: met ? 'met' : 'NOT met', detail }
  }
  return out
}

export function targetsSection (targets: Record<string, TargetResult>): string[] {
  const rows = Object.values(targets).map(t => [t.target, t.limit, t.measured, t.verdict, t.detail ?? ''])
  return rows.length === 0 ? [] : ['targets (issue 14)', table(['target', 'limit', 'measured', 'verdict', 'note'], rows, [0, 3, 4])]
}
