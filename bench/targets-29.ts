// The targets of issue 29 (performance to the floor), each judged from this run like those of issue
// 14 (judge.ts): ratios within the run, mostly against the floor proxies measured beside the
// gateway, so that a busy machine moves both sides. CPU is read at 64 calls in flight; the lean
// driver unless a target says otherwise; both sides of a ratio with the same driver.
import type { IdleResult } from './idle.ts'
import { judge, judgedSection, minus, ratio, type Spec, type TargetResult } from './judge.ts'
import { largeMedians, perMbGrowth, type LargeResult } from './large-result.ts'
import { floorOf } from './report-sections.ts'
import type { Selectable } from './settings.ts'
import { fmt, type PathSummary } from './summary.ts'
import { idleRssSpec } from './targets.ts'
import type { PathId } from './target.ts'

export interface Targets29Inputs {
  paths: ReadonlySet<Selectable>
  summaries: PathSummary[]
  idle?: IdleResult
  large?: LargeResult
}

/** The large result the targets are read at, and the smaller one its time per MB is compared with. */
const LARGE_MB = 30
const LARGE_BASE_MB = 10

function specs (x: Targets29Inputs): Spec[] {
  const by = (id: PathId): PathSummary | undefined => x.summaries.find(s => s.path === id)
  const cpu = (id: PathId): number | undefined => by(id)?.byPhase.c64?.proxyCpuUs
  const cpuNote = (a: PathId, b: PathId) => (): string | undefined => cpu(a) === undefined || cpu(b) === undefined ? undefined : `${fmt(cpu(a), 1)} ÷ ${fmt(cpu(b), 1)} µs`
  const overFloor = (id: PathId): number | undefined => ratio(cpu(id), cpu(floorOf(id)))
  const big = largeMedians(x.large, LARGE_MB)
  const base = largeMedians(x.large, LARGE_BASE_MB)
  const out: Spec[] = []
  out.push({ key: 'cpuOverFloor_c', target: 'gateway CPU per call at c64 ÷ the floor\'s (c ÷ floor)', cmp: '≤', limit: 1.3, unit: '×', digits: 2, needs: [['c', 'lean'], 'floor'], value: () => overFloor('gateway-lean'), detail: cpuNote('gateway-lean', 'floor-lean') })
  out.push({ key: 'cpuOverFloor_d', target: 'gateway + auth, policy, limit, audit: CPU per call at c64 ÷ the floor\'s (d ÷ floor)', cmp: '≤', limit: 1.6, unit: '×', digits: 2, needs: [['d', 'lean'], 'floor'], value: () => overFloor('gateway-secured-lean'), detail: cpuNote('gateway-secured-lean', 'floor-lean') })
  out.push({
    key: 'callsOverFloor_c',
    target: 'gateway calls/s at c64 ÷ the floor\'s (c ÷ floor)',
    cmp: '≥',
    limit: 0.85,
    unit: '×',
    digits: 2,
    needs: [['c', 'lean'], 'floor'],
    value: () => ratio(by('gateway-lean')?.c64CallsPerSec, by('floor-lean')?.c64CallsPerSec),
    detail: () => `${fmt(by('gateway-lean')?.c64CallsPerSec, 0)} ÷ ${fmt(by('floor-lean')?.c64CallsPerSec, 0)} calls/s`
  })
  out.push({ key: 'cpuOverSupergatewaySse_sdk', target: 'gateway CPU per call at c64 ÷ supergateway SSE\'s, SDK client on both (≤ 1/1.5)', cmp: '≤', limit: 1 / 1.5, unit: '×', digits: 2, needs: [['c', 'sdk'], 'supergateway'], value: () => ratio(cpu('gateway'), cpu('supergateway-sse')), detail: cpuNote('gateway', 'supergateway-sse') })
  out.push({ key: 'cpuOverHttpFloor_h', target: 'gateway → Streamable HTTP upstream: CPU per call at c64 ÷ its floor\'s (h ÷ hfloor)', cmp: '≤', limit: 1.3, unit: '×', digits: 2, needs: [['h', 'lean'], 'hfloor'], value: () => overFloor('gateway-http-lean'), detail: cpuNote('gateway-http-lean', 'floor-http-lean') })
  out.push({ key: 'cpuThreeReplicasOverOne_sdk', target: 'HAProxy → 3 replicas, Redis: CPU per call at c64 (all replicas) ÷ one gateway without Redis, SDK client (g ÷ c)', cmp: '≤', limit: 1.15, unit: '×', digits: 2, needs: [['g', 'sdk'], ['c', 'sdk']], value: () => ratio(cpu('haproxy-3'), cpu('gateway')), detail: cpuNote('haproxy-3', 'gateway') })
  out.push({ key: 'largeGrowth', target: `${LARGE_MB} MB result: gateway peak RSS growth ÷ the payload`, cmp: '≤', limit: 2, unit: '×', digits: 2, needs: ['large'], value: () => big?.growthRatio, detail: () => big === undefined ? undefined : `+${fmt(big.peakGrowthMb, 1)} MiB` })
  out.push({ key: 'largeEchoP99', target: `${LARGE_MB} MB result: another session's echo p99 meanwhile`, cmp: '≤', limit: 50, unit: 'ms', digits: 1, needs: ['large'], value: () => big?.echoP99Ms, detail: () => big === undefined ? undefined : `${big.echoCalls} echo calls; max ${fmt(big.echoMaxMs, 1)} ms` })
  out.push({
    key: 'largeLinear',
    target: `large result time linear in size: ms per MB at ${LARGE_MB} MB ÷ at ${LARGE_BASE_MB} MB (linear: ≤ 1; quadratic: 3)`,
    cmp: '≤',
    limit: 1.5,
    unit: '×',
    digits: 2,
    needs: ['large'],
    value: () => perMbGrowth(x.large, LARGE_MB, LARGE_BASE_MB),
    detail: () => big === undefined || base === undefined ? undefined : `${fmt(big.callMs, 0)} ms ÷ ${fmt(base.callMs, 0)} ms`
  })
  out.push(idleRssSpec(x.idle))
  const rss = (id: PathId): number | undefined => by(id)?.byPhase.c64?.peakRssMb
  out.push({
    key: 'peakRssOverFloor_c',
    target: 'gateway peak RSS at c64 ÷ the floor\'s (c ÷ floor)',
    cmp: '≤',
    limit: 1.3,
    unit: '×',
    digits: 2,
    needs: [['c', 'lean'], 'floor'],
    value: () => ratio(rss('gateway-lean'), rss('floor-lean')),
    detail: () => `${fmt(rss('gateway-lean'), 1)} ÷ ${fmt(rss('floor-lean'), 1)} MiB`
  })
  out.push({ key: 'addedP50_lean', target: 'added seq p50 over direct stdio (c − a)', cmp: '≤', limit: 0.25, unit: 'ms', digits: 3, needs: [['c', 'lean'], ['a', 'lean']], value: () => minus(by('gateway-lean')?.seqP50Ms, by('direct-stdio-lean')?.seqP50Ms) })
  return out
}

export function evaluateTargets29 (x: Targets29Inputs): Record<string, TargetResult> {
  return judge(x.paths, specs(x))
}

export function targetsSection29 (targets: Record<string, TargetResult>): string[] {
  return judgedSection('targets (issue 29): lean driver unless said, CPU at c64, ratios within this run', targets)
}
