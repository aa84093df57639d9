// Reporting: the tables and ratios printed on stdout, and the full results written as JSON
// (.bench-results/latest.json unless --json says otherwise).
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { CatalogResult } from './catalog.ts'
import { ROOT, log } from './common.ts'
import { failureSamples, type RepResult } from './phase.ts'
import { CLK_TCK } from './proc.ts'
import { catalogSection, peerRatios, peersSection, scalingSection, type PeerRatio } from './report-sections.ts'
import type { Settings } from './settings.ts'
import { round } from './stats.ts'
import { fmt, table, type PathSummary } from './summary.ts'
import type { PathId } from './target.ts'

const TARGET_GATEWAY_CPU_US = 100
const TARGET_ADDED_P50_MS = 0.5
// Issue 11: sessions shared through Redis may add at most this at the median over sessions in memory.
const TARGET_REDIS_ADDED_P50_MS = 0.2

/** The load average before and after the run. */
export interface Load { before: number[], after: number[] }

/** Everything besides the per-path summaries that the report shows. */
export interface Extras {
  catalog: CatalogResult[]
  catalogProblems: string[]
  peerProblems: string[]
}

export interface Report { text: string, ratios: Record<string, number>, peers: PeerRatio[], targets: Record<string, unknown> }

const verdict = (met: boolean): string => met ? 'met' : 'NOT met'

function directRatios (by: (id: PathId) => PathSummary | undefined): Record<string, number> {
  const [a, b, c, d, e] = (['direct-stdio', 'direct-http', 'gateway', 'gateway-secured', 'gateway-redis'] as const).map(by)
  const out: Record<string, number> = {}
  if (c === undefined) return out
  for (const [name, direct] of [['DirectStdio', a], ['DirectHttp', b]] as const) {
    if (direct === undefined) continue
    out[`p50GatewayOver${name}`] = c.seqP50Ms / direct.seqP50Ms
    out[`c16ThroughputGatewayOver${name}`] = c.c16CallsPerSec / direct.c16CallsPerSec
    out[`c64ThroughputGatewayOver${name}`] = c.c64CallsPerSec / direct.c64CallsPerSec
    out[`addedP50MsVs${name}`] = c.seqP50Ms - direct.seqP50Ms
  }
  const cpu = c.proxyCpuUsPerCall ?? Number.NaN
  if (d !== undefined) Object.assign(out, { securedAddedCpuUsPerCall: (d.proxyCpuUsPerCall ?? Number.NaN) - cpu, securedAddedP50Ms: d.seqP50Ms - c.seqP50Ms, securedC16ThroughputOverPlain: d.c16CallsPerSec / c.c16CallsPerSec })
  if (e !== undefined) Object.assign(out, { redisAddedCpuUsPerCall: (e.proxyCpuUsPerCall ?? Number.NaN) - cpu, redisAddedP50Ms: e.seqP50Ms - c.seqP50Ms, redisC16ThroughputOverPlain: e.c16CallsPerSec / c.c16CallsPerSec })
  return out
}

export function report (settings: Settings, summaries: PathSummary[], extras: Extras, wallMs: number, load: Load): Report {
  const by = (id: PathId): PathSummary | undefined => summaries.find(s => s.path === id)
  const ratios = directRatios(by)
  const peers = peerRatios(summaries)
  const out: string[] = []
  out.push(`Switchboard bench: ${settings.reps} rep(s) interleaved, medians; warm-up ${settings.warmup}, seq ${settings.seqCalls}, ${settings.concurrency.map(x => `c${x}`).join('/')} ${settings.concCalls} calls each; paths ${[...settings.paths].join(',')}`)
  out.push(`machine: ${os.cpus().length} CPU(s) ${os.cpus()[0]?.model ?? ''}, node ${process.version}, loadavg ${load.before.map(x => x.toFixed(2)).join(' ')} -> ${load.after.map(x => x.toFixed(2)).join(' ')}, wall ${(wallMs / 1000).toFixed(1)} s`)
  if (summaries.length > 0) {
    out.push('')
    out.push(table(
      ['path', 'driver', 'seq p50 ms', 'seq p99 ms', 'c16 calls/s', 'c64 calls/s', 'proxy CPU µs/call', 'proxy peak RSS MiB', 'failures'],
      summaries.map(s => [s.label, s.driver, fmt(s.seqP50Ms, 3), fmt(s.seqP99Ms, 3), fmt(s.c16CallsPerSec, 0), fmt(s.c64CallsPerSec, 0), fmt(s.proxyCpuUsPerCall, 1), fmt(s.proxyPeakRssMb, 1), String(s.failures)])
    ))
    out.push('')
    out.push(table(
      ['CPU µs/call (seq, c16, c64)', 'driver', 'driver CPU', 'upstream', 'proxy', 'proxy main thread', 'proxy seq', 'proxy c64'],
      summaries.map(s => [s.label, s.driver, fmt(s.driverCpuUsPerCall, 1), fmt(s.upstreamCpuUsPerCall, 1), fmt(s.proxyCpuUsPerCall, 1), fmt(s.proxyMainThreadCpuUsPerCall, 1), fmt(s.byPhase.seq?.proxyCpuUs, 1), fmt(s.byPhase.c64?.proxyCpuUs, 1)])
    ))
  }
  if (ratios.p50GatewayOverDirectStdio !== undefined || ratios.p50GatewayOverDirectHttp !== undefined) {
    const row = (label: string, key: string, digits: number): string => `  ${label.padEnd(30)}${fmt(ratios[`${key}DirectStdio`], digits).padStart(15)}   ${fmt(ratios[`${key}DirectHttp`], digits).padStart(14)}`
    out.push('')
    out.push('ratios (gateway c, SDK client / direct)  vs direct stdio   vs direct HTTP')
    out.push(row('seq p50 (lower is better)', 'p50GatewayOver', 2))
    out.push(row('c16 calls/s (higher better)', 'c16ThroughputGatewayOver', 2))
    out.push(row('c64 calls/s (higher better)', 'c64ThroughputGatewayOver', 2))
    out.push(row('added seq p50 ms', 'addedP50MsVs', 3))
  }
  if (ratios.securedAddedCpuUsPerCall !== undefined) {
    out.push(`access control (d − c): gateway CPU ${fmt(ratios.securedAddedCpuUsPerCall, 1)} µs/call, seq p50 ${fmt(ratios.securedAddedP50Ms, 3)} ms, c16 calls/s × ${fmt(ratios.securedC16ThroughputOverPlain, 2)}`)
  }
  const f = by('haproxy-1')
  const g = by('haproxy-3')
  if (f !== undefined && g !== undefined) {
    out.push(`scale-out (g vs f, ${os.cpus().length} CPUs): c16 calls/s ${fmt(f.c16CallsPerSec, 0)} -> ${fmt(g.c16CallsPerSec, 0)} (× ${fmt(g.c16CallsPerSec / f.c16CallsPerSec, 2)}), c64 ${fmt(f.c64CallsPerSec, 0)} -> ${fmt(g.c64CallsPerSec, 0)} (× ${fmt(g.c64CallsPerSec / f.c64CallsPerSec, 2)}), gateway CPU µs/call ${fmt(f.proxyCpuUsPerCall, 1)} -> ${fmt(g.proxyCpuUsPerCall, 1)} (all replicas)`)
  }
  if (ratios.redisAddedP50Ms !== undefined) {
    out.push(`sessions in Redis (e − c): seq p50 ${fmt(ratios.redisAddedP50Ms, 3)} ms (target < ${TARGET_REDIS_ADDED_P50_MS} ms), gateway CPU ${fmt(ratios.redisAddedCpuUsPerCall, 1)} µs/call, c16 calls/s × ${fmt(ratios.redisC16ThroughputOverPlain, 2)}`)
  }
  for (const section of [peersSection(peers, extras.peerProblems), scalingSection(by('gateway-lean')), catalogSection(extras.catalog, extras.catalogProblems)]) {
    if (section.length > 0) out.push('', ...section)
  }
  const targets: Record<string, unknown> = {}
  const targetLines: string[] = []
  for (const [key, s, what] of [['gatewayCpuUsPerCall', by('gateway'), 'SDK client'], ['gatewayCpuUsPerCallLean', by('gateway-lean'), 'lean driver']] as const) {
    if (s === undefined) continue
    const cpu = s.proxyCpuUsPerCall ?? Number.NaN
    targets[key] = { value: cpu, target: TARGET_GATEWAY_CPU_US, met: cpu <= TARGET_GATEWAY_CPU_US }
    targetLines.push(`  gateway CPU ≤ ${TARGET_GATEWAY_CPU_US} µs/call (c, ${what}): ${fmt(cpu, 1)} µs -> ${verdict(cpu <= TARGET_GATEWAY_CPU_US)}`)
  }
  const added = ratios.addedP50MsVsDirectStdio
  if (added !== undefined) {
    targets.addedP50Ms = { value: added, target: TARGET_ADDED_P50_MS, met: added <= TARGET_ADDED_P50_MS }
    targetLines.push(`  added p50 ≤ ${TARGET_ADDED_P50_MS} ms (gateway − direct stdio, SDK client): ${fmt(added, 3)} ms -> ${verdict(added <= TARGET_ADDED_P50_MS)}`)
  }
  if (targetLines.length > 0) out.push('', 'targets', ...targetLines)
  const own = summaries.filter(s => s.role !== 'peer').reduce((n, s) => n + s.failures, 0) + extras.catalog.reduce((n, r) => n + r.firstPage.failures + (r.search?.failures ?? 0), 0)
  const peer = summaries.filter(s => s.role === 'peer').reduce((n, s) => n + s.failures, 0)
  if (own + peer > 0) {
    out.push('', `FAILURES: ${own} call(s) failed or answered wrongly on the direct, gateway and catalog paths; ${peer} on the peers (which do not change the exit code); first ones:`)
    for (const sample of failureSamples()) out.push(`  ${sample}`)
  }
  return { text: out.join('\n'), ratios, peers, targets }
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
    targets: r.report.targets,
    reps: Object.fromEntries(r.reps),
    failureSamples: failureSamples(),
    abortListenerWarnings: r.abortListenerWarnings
  }
  writeFileSync(file, JSON.stringify(json, (_k, v: unknown) => typeof v === 'number' ? round(v, 4) : v, 2) + '\n')
  log(`results written to ${path.relative(ROOT, file)}`)
}
