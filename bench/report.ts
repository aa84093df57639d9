// Reporting: the tables and ratios printed on stdout, and the full results written as JSON
// (.bench-results/latest.json unless --json says otherwise).
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { CatalogResult } from './catalog.ts'
import { ROOT, log } from './common.ts'
import type { IdleResult } from './idle.ts'
import { largeSection, type LargeResult } from './large-result.ts'
import { LEAN_CALLS_FACTOR, failureSamples, type RepResult } from './phase.ts'
import { CLK_TCK } from './proc.ts'
import { catalogSection, floorSection, idleSection, peerRatios, peersSection, scalingSection, type PeerRatio } from './report-sections.ts'
import type { Settings } from './settings.ts'
import { round } from './stats.ts'
import { fmt, table, type PathSummary } from './summary.ts'
import { evaluateTargets, targetsSection, type TargetResult } from './targets.ts'
import { evaluateTargets29, targetsSection29 } from './targets-29.ts'
import { withDriver, type PathId } from './target.ts'

/** The load average before and after the run. */
export interface Load { before: number[], after: number[] }

/** Everything besides the per-path summaries that the report shows. */
export interface Extras {
  catalog: CatalogResult[]
  catalogProblems: string[]
  peerProblems: string[]
  idle?: IdleResult
  large?: LargeResult
}

export interface Report {
  text: string
  ratios: Record<string, number>
  peers: PeerRatio[]
  /** Issue 14's targets, and issue 29's. */
  targets: Record<string, TargetResult>
  targets29: Record<string, TargetResult>
}

const DRIVERS = [['sdk', ''], ['lean', 'Lean']] as const

/**
 * Path c against the direct paths and against its variants (d secured, e Redis), with the same driver
 * on both sides; the lean driver's keys end in `Lean`.
 */
function directRatios (by: (id: PathId) => PathSummary | undefined): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [kind, suffix] of DRIVERS) {
    const [a, b, c, d, e] = (['direct-stdio', 'direct-http', 'gateway', 'gateway-secured', 'gateway-redis'] as const).map(id => by(withDriver(id, kind)))
    if (c === undefined) continue
    for (const [name, direct] of [['DirectStdio', a], ['DirectHttp', b]] as const) {
      if (direct === undefined) continue
      out[`p50GatewayOver${name}${suffix}`] = c.seqP50Ms / direct.seqP50Ms
      out[`c16ThroughputGatewayOver${name}${suffix}`] = c.c16CallsPerSec / direct.c16CallsPerSec
      out[`c64ThroughputGatewayOver${name}${suffix}`] = c.c64CallsPerSec / direct.c64CallsPerSec
      out[`addedP50MsVs${name}${suffix}`] = c.seqP50Ms - direct.seqP50Ms
    }
    for (const [name, v] of [['secured', d], ['redis', e]] as const) {
      if (v === undefined) continue
      out[`${name}AddedCpuUsPerCall${suffix}`] = (v.proxyCpuUsPerCall ?? Number.NaN) - (c.proxyCpuUsPerCall ?? Number.NaN)
      out[`${name}AddedCpuUsC64${suffix}`] = (v.byPhase.c64?.proxyCpuUs ?? Number.NaN) - (c.byPhase.c64?.proxyCpuUs ?? Number.NaN)
      out[`${name}AddedP50Ms${suffix}`] = v.seqP50Ms - c.seqP50Ms
      out[`${name}C16ThroughputOverPlain${suffix}`] = v.c16CallsPerSec / c.c16CallsPerSec
    }
  }
  return out
}

function ratioOf (a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b
}

/** The ratio table (c ÷ a, c ÷ b, per driver) and the lines for d − c, e − c, g vs f and i vs g. */
function ratioLines (ratios: Record<string, number>, by: (id: PathId) => PathSummary | undefined): string[] {
  const out: string[] = []
  const columns = DRIVERS.flatMap(([kind, suffix]) => [['DirectStdio', `vs a, ${kind}`, suffix], ['DirectHttp', `vs b, ${kind}`, suffix]] as const)
    .filter(([name, , suffix]) => ratios[`addedP50MsVs${name}${suffix}`] !== undefined)
  if (columns.length > 0) {
    const row = (label: string, key: string, digits: number): string[] => [label, ...columns.map(([name, , suffix]) => fmt(ratios[`${key}${name}${suffix}`], digits))]
    out.push('', 'gateway (c) ÷ direct, same driver on both sides')
    out.push(table(['ratio', ...columns.map(([, title]) => title)], [
      row('seq p50 (lower is better)', 'p50GatewayOver', 2),
      row('c16 calls/s (higher better)', 'c16ThroughputGatewayOver', 2),
      row('c64 calls/s (higher better)', 'c64ThroughputGatewayOver', 2),
      row('added seq p50 ms', 'addedP50MsVs', 3)
    ]))
  }
  for (const [kind, suffix] of DRIVERS) {
    if (ratios[`securedAddedP50Ms${suffix}`] !== undefined) {
      out.push(`access control (d − c, ${kind}): gateway CPU ${fmt(ratios[`securedAddedCpuUsPerCall${suffix}`], 1)} µs/call (at c64 ${fmt(ratios[`securedAddedCpuUsC64${suffix}`], 1)}), seq p50 ${fmt(ratios[`securedAddedP50Ms${suffix}`], 3)} ms, c16 calls/s × ${fmt(ratios[`securedC16ThroughputOverPlain${suffix}`], 2)}`)
    }
  }
  for (const [kind, suffix] of DRIVERS) {
    if (ratios[`redisAddedP50Ms${suffix}`] !== undefined) {
      out.push(`sessions in Redis (e − c, ${kind}): seq p50 ${fmt(ratios[`redisAddedP50Ms${suffix}`], 3)} ms, gateway CPU ${fmt(ratios[`redisAddedCpuUsPerCall${suffix}`], 1)} µs/call (at c64 ${fmt(ratios[`redisAddedCpuUsC64${suffix}`], 1)}), c16 calls/s × ${fmt(ratios[`redisC16ThroughputOverPlain${suffix}`], 2)}`)
    }
  }
  const f = by('haproxy-1')
  const g = by('haproxy-3')
  if (f !== undefined && g !== undefined) {
    out.push(`scale-out (g vs f, ${os.cpus().length} CPUs): c16 calls/s ${fmt(f.c16CallsPerSec, 0)} -> ${fmt(g.c16CallsPerSec, 0)} (× ${fmt(g.c16CallsPerSec / f.c16CallsPerSec, 2)}), c64 ${fmt(f.c64CallsPerSec, 0)} -> ${fmt(g.c64CallsPerSec, 0)} (× ${fmt(g.c64CallsPerSec / f.c64CallsPerSec, 2)}), gateway CPU µs/call ${fmt(f.proxyCpuUsPerCall, 1)} -> ${fmt(g.proxyCpuUsPerCall, 1)} (all replicas)`)
  }
  const i = by('haproxy-3-cluster')
  if (g !== undefined && i !== undefined) {
    out.push(`cluster (i vs g, 3 replicas, 3-primary Redis Cluster vs one Redis): c16 calls/s ${fmt(g.c16CallsPerSec, 0)} -> ${fmt(i.c16CallsPerSec, 0)} (× ${fmt(i.c16CallsPerSec / g.c16CallsPerSec, 2)}), c64 ${fmt(g.c64CallsPerSec, 0)} -> ${fmt(i.c64CallsPerSec, 0)} (× ${fmt(i.c64CallsPerSec / g.c64CallsPerSec, 2)}), seq p50 ${fmt(g.seqP50Ms, 3)} -> ${fmt(i.seqP50Ms, 3)} ms, gateway CPU µs/call ${fmt(g.proxyCpuUsPerCall, 1)} -> ${fmt(i.proxyCpuUsPerCall, 1)} (× ${fmt(ratioOf(i.proxyCpuUsPerCall, g.proxyCpuUsPerCall), 2)}, all replicas), Redis CPU µs/call ${fmt(g.redisCpuUsPerCall, 1)} -> ${fmt(i.redisCpuUsPerCall, 1)} (all nodes)`)
  }
  return out
}

export function report (settings: Settings, summaries: PathSummary[], extras: Extras, wallMs: number, load: Load): Report {
  const by = (id: PathId): PathSummary | undefined => summaries.find(s => s.path === id)
  const ratios = directRatios(by)
  const peers = peerRatios(summaries)
  const out: string[] = []
  out.push(`Switchboard bench: ${settings.reps} rep(s) interleaved, medians; warm-up ${settings.warmup}, seq ${settings.seqCalls}, ${settings.concurrency.map(x => `c${x}`).join('/')} ${settings.concCalls} calls each (lean driver ${settings.concCalls * LEAN_CALLS_FACTOR}); paths ${[...settings.paths].join(',')}`)
  out.push(`machine: ${os.cpus().length} CPU(s) ${os.cpus()[0]?.model ?? ''}, node ${process.version}, loadavg ${load.before.map(x => x.toFixed(2)).join(' ')} -> ${load.after.map(x => x.toFixed(2)).join(' ')}, wall ${(wallMs / 1000).toFixed(1)} s`)
  if (summaries.length > 0) {
    out.push('')
    out.push(table(
      ['path', 'driver', 'seq p50 ms', 'seq p99 ms', 'c16 calls/s', 'c64 calls/s', 'proxy CPU µs/call', 'proxy peak RSS MiB', 'failures'],
      summaries.map(s => [s.label, s.driver, fmt(s.seqP50Ms, 3), fmt(s.seqP99Ms, 3), fmt(s.c16CallsPerSec, 0), fmt(s.c64CallsPerSec, 0), fmt(s.proxyCpuUsPerCall, 1), fmt(s.proxyPeakRssMb, 1), String(s.failures)])
    ))
    out.push('')
    out.push(table(
      ['CPU µs/call (seq, c16, c64)', 'driver', 'driver CPU', 'upstream', 'Redis', 'proxy', 'proxy main thread', 'proxy seq', 'proxy c64'],
      summaries.map(s => [s.label, s.driver, fmt(s.driverCpuUsPerCall, 1), fmt(s.upstreamCpuUsPerCall, 1), fmt(s.redisCpuUsPerCall, 1), fmt(s.proxyCpuUsPerCall, 1), fmt(s.proxyMainThreadCpuUsPerCall, 1), fmt(s.byPhase.seq?.proxyCpuUs, 1), fmt(s.byPhase.c64?.proxyCpuUs, 1)])
    ))
  }
  out.push(...ratioLines(ratios, by))
  const targets = evaluateTargets({ paths: settings.paths, summaries, peers, catalog: extras.catalog, idle: extras.idle })
  const targets29 = evaluateTargets29({ paths: settings.paths, summaries, idle: extras.idle, large: extras.large })
  for (const section of [peersSection(peers, extras.peerProblems), floorSection(summaries), scalingSection(by('gateway-lean')), catalogSection(extras.catalog, extras.catalogProblems), idleSection(extras.idle), largeSection(extras.large), targetsSection(targets), targetsSection29(targets29)]) {
    if (section.length > 0) out.push('', ...section)
  }
  const own = summaries.filter(s => s.role !== 'peer').reduce((n, s) => n + s.failures, 0) + extras.catalog.reduce((n, r) => n + r.firstPage.failures + (r.search?.failures ?? 0), 0) + (extras.idle?.sessions?.failures ?? 0)
  const peer = summaries.filter(s => s.role === 'peer').reduce((n, s) => n + s.failures, 0)
  if (own + peer > 0) {
    out.push('', `FAILURES: ${own} call(s) failed or answered wrongly on the direct, gateway, catalog and idle paths; ${peer} on the peers (which do not change the exit code); first ones:`)
    for (const sample of failureSamples()) out.push(`  ${sample}`)
  }
  return { text: out.join('\n'), ratios, peers, targets, targets29 }
}

/** Everything one run produced, as written to the results file. */
export interface RunResults {
  settings: Settings
  load: Load
  wallMs: number
  summaries: PathSummary[]
  report: Report
  extras: Extras
  reps: Map<PathId, RepResult[]>
  abortListenerWarnings: number
}

export function writeResults (r: RunResults): void {
  const file = r.settings.jsonFile
  mkdirSync(path.dirname(file), { recursive: true })
  const json = {
    when: new Date().toISOString(),
    settings: { ...r.settings, paths: [...r.settings.paths] },
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}`, clockTicks: CLK_TCK, loadavgBefore: r.load.before, loadavgAfter: r.load.after },
    wallSeconds: round(r.wallMs / 1000, 1),
    summary: r.summaries,
    ratios: r.report.ratios,
    peers: { ratios: r.report.peers, problems: r.extras.peerProblems },
    catalog: { results: r.extras.catalog, problems: r.extras.catalogProblems },
    idle: r.extras.idle,
    large: r.extras.large,
    targets: r.report.targets,
    targets29: r.report.targets29,
    reps: Object.fromEntries(r.reps),
    failureSamples: failureSamples(),
    abortListenerWarnings: r.abortListenerWarnings
  }
  writeFileSync(file, JSON.stringify(json, (_k, v: unknown) => typeof v === 'number' ? round(v, 4) : v, 2) + '\n')
  log(`results written to ${path.relative(ROOT, file)}`)
}
