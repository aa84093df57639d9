// Reporting: medians per path over the repetitions, the tables and ratios printed on stdout, and
// the full results written to .bench-results/latest.json.
import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT, log } from './common.ts'
import type { PathId, Target } from './target.ts'
import { failureSamples, type RepResult } from './phase.ts'
import { CLK_TCK } from './proc.ts'
import type { Settings } from './settings.ts'
import { median, round } from './stats.ts'

const RESULTS_FILE = path.join(ROOT, '.bench-results', 'latest.json')

const TARGET_GATEWAY_CPU_US = 100
const TARGET_ADDED_P50_MS = 0.5
// Issue 11: sessions shared through Redis may add at most this at the median over sessions in memory.
const TARGET_REDIS_ADDED_P50_MS = 0.2

/** The load average before and after the run. */
export interface Load { before: number[], after: number[] }

export interface PathSummary {
  path: PathId
  label: string
  seqP50Ms: number
  seqP99Ms: number
  c16CallsPerSec: number
  c64CallsPerSec: number
  c16P50Ms: number
  c64P50Ms: number
  gatewayCpuUsPerCall?: number
  gatewayMainThreadCpuUsPerCall?: number
  gatewayCpuUsPerCallByPhase?: Record<string, number>
  upstreamCpuUsPerCall?: number
  driverCpuUsPerCall: number
  failures: number
  gatewayPeakRssMb?: number
}

export function summarize (t: Target, reps: RepResult[]): PathSummary {
  const m = (f: (r: RepResult) => number | undefined): number => median(reps.map(f).filter((x): x is number => x !== undefined))
  const failures = reps.reduce((n, r) => n + r.warmupFailures + r.seq.failures + Object.values(r.conc).reduce((k, p) => k + p.failures, 0), 0)
  const peak = Math.max(...reps.map(r => r.gatewayPeakRssKb ?? 0))
  const s: PathSummary = {
    path: t.id,
    label: t.label,
    seqP50Ms: m(r => r.seq.p50Ms),
    seqP99Ms: m(r => r.seq.p99Ms),
    c16CallsPerSec: m(r => r.conc.c16?.callsPerSec),
    c64CallsPerSec: m(r => r.conc.c64?.callsPerSec),
    c16P50Ms: m(r => r.conc.c16?.p50Ms),
    c64P50Ms: m(r => r.conc.c64?.p50Ms),
    upstreamCpuUsPerCall: m(r => r.upstreamCpuUsPerCall),
    driverCpuUsPerCall: m(r => r.driverCpuUsPerCall),
    failures
  }
  if (t.gatewayPid !== undefined || t.replicaPids !== undefined) {
    s.gatewayCpuUsPerCall = m(r => r.gatewayCpuUsPerCall)
    s.gatewayMainThreadCpuUsPerCall = m(r => r.gatewayMainThreadCpuUsPerCall)
    s.gatewayCpuUsPerCallByPhase = {
      seq: m(r => r.seq.gatewayCpuUs),
      c16: m(r => r.conc.c16?.gatewayCpuUs),
      c64: m(r => r.conc.c64?.gatewayCpuUs)
    }
    s.gatewayPeakRssMb = peak / 1024
  }
  return s
}

function table (header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map(r => (r[i] ?? '').length)))
  const line = (cells: string[]): string => cells.map((c, i) => i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)).join('  ')
  return [line(header), widths.map(w => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

export const fmt = (x: number | undefined, digits: number): string => x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits)

export interface Report { text: string, ratios: Record<string, number>, targets: Record<string, unknown> }

export function report (settings: Settings, summaries: PathSummary[], wallMs: number, load: Load): Report {
  const by = (id: PathId): PathSummary => summaries.find(s => s.path === id) as PathSummary
  const a = by('direct-stdio')
  const b = by('direct-http')
  const c = by('gateway')
  const d = summaries.find(s => s.path === 'gateway-secured')
  const e = summaries.find(s => s.path === 'gateway-redis')
  const ratios = {
    p50GatewayOverDirectStdio: c.seqP50Ms / a.seqP50Ms,
    p50GatewayOverDirectHttp: c.seqP50Ms / b.seqP50Ms,
    c16ThroughputGatewayOverDirectStdio: c.c16CallsPerSec / a.c16CallsPerSec,
    c16ThroughputGatewayOverDirectHttp: c.c16CallsPerSec / b.c16CallsPerSec,
    c64ThroughputGatewayOverDirectStdio: c.c64CallsPerSec / a.c64CallsPerSec,
    c64ThroughputGatewayOverDirectHttp: c.c64CallsPerSec / b.c64CallsPerSec,
    addedP50MsVsDirectStdio: c.seqP50Ms - a.seqP50Ms,
    addedP50MsVsDirectHttp: c.seqP50Ms - b.seqP50Ms,
    ...(d === undefined
      ? {}
      : {
          securedAddedCpuUsPerCall: (d.gatewayCpuUsPerCall ?? Number.NaN) - (c.gatewayCpuUsPerCall ?? Number.NaN),
          securedAddedP50Ms: d.seqP50Ms - c.seqP50Ms,
          securedC16ThroughputOverPlain: d.c16CallsPerSec / c.c16CallsPerSec
        }),
    ...(e === undefined
      ? {}
      : {
          redisAddedCpuUsPerCall: (e.gatewayCpuUsPerCall ?? Number.NaN) - (c.gatewayCpuUsPerCall ?? Number.NaN),
          redisAddedP50Ms: e.seqP50Ms - c.seqP50Ms,
          redisC16ThroughputOverPlain: e.c16CallsPerSec / c.c16CallsPerSec
        })
  }
  const cpu = c.gatewayCpuUsPerCall ?? Number.NaN
  const targets = {
    gatewayCpuUsPerCall: { value: cpu, target: TARGET_GATEWAY_CPU_US, met: cpu <= TARGET_GATEWAY_CPU_US },
    addedP50Ms: { value: ratios.addedP50MsVsDirectStdio, target: TARGET_ADDED_P50_MS, met: ratios.addedP50MsVsDirectStdio <= TARGET_ADDED_P50_MS }
  }
  const verdict = (met: boolean): string => met ? 'met' : 'NOT met'
  const out: string[] = []
  out.push(`Switchboard bench: ${settings.reps} rep(s) interleaved, medians; warm-up ${settings.warmup}, seq ${settings.seqCalls}, ${settings.concurrency.map(x => `c${x}`).join('/')} ${settings.concCalls} calls each`)
  out.push(`machine: ${os.cpus().length} CPU(s) ${os.cpus()[0]?.model ?? ''}, node ${process.version}, loadavg ${load.before.map(x => x.toFixed(2)).join(' ')} -> ${load.after.map(x => x.toFixed(2)).join(' ')}, wall ${(wallMs / 1000).toFixed(1)} s`)
  out.push('')
  out.push(table(
    ['path', 'seq p50 ms', 'seq p99 ms', 'c16 calls/s', 'c64 calls/s', 'gateway CPU µs/call', 'failures'],
    summaries.map(s => [s.label, fmt(s.seqP50Ms, 3), fmt(s.seqP99Ms, 3), fmt(s.c16CallsPerSec, 0), fmt(s.c64CallsPerSec, 0), fmt(s.gatewayCpuUsPerCall, 1), String(s.failures)])
  ))
  out.push('')
  out.push(table(
    ['CPU µs/call (all measured phases)', 'driver', 'upstream', 'gateway', 'gateway main thread'],
    summaries.map(s => [s.label, fmt(s.driverCpuUsPerCall, 1), fmt(s.upstreamCpuUsPerCall, 1), fmt(s.gatewayCpuUsPerCall, 1), fmt(s.gatewayMainThreadCpuUsPerCall, 1)])
  ))
  if (c.gatewayCpuUsPerCallByPhase !== undefined) {
    const p = c.gatewayCpuUsPerCallByPhase
    out.push(`gateway CPU µs/call by phase: seq ${fmt(p.seq, 1)}, c16 ${fmt(p.c16, 1)}, c64 ${fmt(p.c64, 1)}; gateway peak RSS (VmHWM) ${fmt(c.gatewayPeakRssMb, 1)} MiB`)
  }
  out.push('')
  out.push('ratios (gateway / direct)       vs direct stdio   vs direct HTTP')
  out.push(`  seq p50 (lower is better)     ${fmt(ratios.p50GatewayOverDirectStdio, 2).padStart(15)}   ${fmt(ratios.p50GatewayOverDirectHttp, 2).padStart(14)}`)
  out.push(`  c16 calls/s (higher better)   ${fmt(ratios.c16ThroughputGatewayOverDirectStdio, 2).padStart(15)}   ${fmt(ratios.c16ThroughputGatewayOverDirectHttp, 2).padStart(14)}`)
  out.push(`  c64 calls/s (higher better)   ${fmt(ratios.c64ThroughputGatewayOverDirectStdio, 2).padStart(15)}   ${fmt(ratios.c64ThroughputGatewayOverDirectHttp, 2).padStart(14)}`)
  out.push(`  added seq p50 ms              ${fmt(ratios.addedP50MsVsDirectStdio, 3).padStart(15)}   ${fmt(ratios.addedP50MsVsDirectHttp, 3).padStart(14)}`)
  if (ratios.securedAddedCpuUsPerCall !== undefined) {
    out.push(`access control (d − c): gateway CPU ${fmt(ratios.securedAddedCpuUsPerCall, 1)} µs/call, seq p50 ${fmt(ratios.securedAddedP50Ms, 3)} ms, c16 calls/s × ${fmt(ratios.securedC16ThroughputOverPlain, 2)}`)
  }
  const f = summaries.find(x => x.path === 'haproxy-1')
  const g = summaries.find(x => x.path === 'haproxy-3')
  if (f !== undefined && g !== undefined) {
    out.push(`scale-out (g vs f, ${os.cpus().length} CPUs): c16 calls/s ${fmt(f.c16CallsPerSec, 0)} -> ${fmt(g.c16CallsPerSec, 0)} (× ${fmt(g.c16CallsPerSec / f.c16CallsPerSec, 2)}), c64 ${fmt(f.c64CallsPerSec, 0)} -> ${fmt(g.c64CallsPerSec, 0)} (× ${fmt(g.c64CallsPerSec / f.c64CallsPerSec, 2)}), gateway CPU µs/call ${fmt(f.gatewayCpuUsPerCall, 1)} -> ${fmt(g.gatewayCpuUsPerCall, 1)} (all replicas)`)
  }
  if (ratios.redisAddedP50Ms !== undefined) {
    out.push(`sessions in Redis (e − c): seq p50 ${fmt(ratios.redisAddedP50Ms, 3)} ms (target < ${TARGET_REDIS_ADDED_P50_MS} ms), gateway CPU ${fmt(ratios.redisAddedCpuUsPerCall, 1)} µs/call, c16 calls/s × ${fmt(ratios.redisC16ThroughputOverPlain, 2)}`)
  }
  out.push('')
  out.push('targets')
  out.push(`  gateway CPU ≤ ${TARGET_GATEWAY_CPU_US} µs/call: ${fmt(cpu, 1)} µs -> ${verdict(targets.gatewayCpuUsPerCall.met)}`)
  out.push(`  added p50 ≤ ${TARGET_ADDED_P50_MS} ms (gateway − direct stdio): ${fmt(ratios.addedP50MsVsDirectStdio, 3)} ms -> ${verdict(targets.addedP50Ms.met)}`)
  const failures = summaries.reduce((n, s) => n + s.failures, 0)
  if (failures > 0) {
    out.push('')
    out.push(`FAILURES: ${failures} call(s) failed or answered wrongly; first ones:`)
    for (const f of failureSamples()) out.push(`  ${f}`)
  }
  return { text: out.join('\n'), ratios, targets }
}

/** Everything one run produced, as written to the results file. */
export interface RunResults {
  settings: Settings
  load: Load
  wallMs: number
  summaries: PathSummary[]
  ratios: Record<string, number>
  targets: Record<string, unknown>
  reps: Map<PathId, RepResult[]>
  abortListenerWarnings: number
}

export function writeResults (r: RunResults): void {
  mkdirSync(path.dirname(RESULTS_FILE), { recursive: true })
  const json = {
    when: new Date().toISOString(),
    settings: r.settings,
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}`, clockTicks: CLK_TCK, loadavgBefore: r.load.before, loadavgAfter: r.load.after },
    wallSeconds: round(r.wallMs / 1000, 1),
    summary: r.summaries,
    ratios: r.ratios,
    targets: r.targets,
    reps: Object.fromEntries(r.reps),
    failureSamples: failureSamples(),
    abortListenerWarnings: r.abortListenerWarnings
  }
  writeFileSync(RESULTS_FILE, JSON.stringify(json, (_k, v: unknown) => typeof v === 'number' ? round(v, 4) : v, 2) + '\n')
  log(`results written to ${path.relative(ROOT, RESULTS_FILE)}`)
}
