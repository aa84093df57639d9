// Measuring one path: warm-up, sequential and concurrent phases of verified echo calls, with the
// CPU time of the driver, the gateway(s) and the upstream(s) read around each measured phase.
import { isAborted } from './abort.ts'
import type { DriverKind, PathId, Target } from './target.ts'
import { processCpuUs, resetPeakRss, statusKb } from './proc.ts'
import type { Settings } from './settings.ts'
import { percentile } from './stats.ts'

export interface PhaseResult {
  calls: number
  ok: number
  failures: number
  elapsedMs: number
  callsPerSec: number
  p50Ms: number
  p99Ms: number
  /** The proxy's (gateway's or peer's) CPU time per successful call, µs; undefined on direct paths. */
  proxyCpuUs?: number
  /** The same, main threads only (the rest is GC helpers, libuv pool, tsx's loader thread). */
  proxyMainThreadCpuUs?: number
  upstreamCpuUs?: number
  /** The Redis processes' CPU per call (paths with sessions in Redis), µs. */
  redisCpuUs?: number
  driverCpuUs: number
  /**
   * The highest VmHWM (KiB) of the path's rssPids during this phase, reset through clear_refs just
   * before it; undefined when the kernel refuses the reset (or the path has no such process).
   */
  peakRssKb?: number
  /** Why the phase stopped early (a path that only fails); its unattempted calls count as failures. */
  abandoned?: string
}

/** A path whose calls fail this many times in a row is given up, so a hung peer cannot stall the run. */
const MAX_CONSECUTIVE_FAILURES = 5

/** CPU time (µs) per process at one instant, so that a process that appears mid-phase counts from zero. */
type CpuByPid = Map<number, number>
interface CpuSample { proxy?: CpuByPid, proxyMain?: CpuByPid, upstream?: CpuByPid, redis?: CpuByPid, driver: number }

function readCpu (pids: number[], mainThreadOnly = false): CpuByPid | undefined {
  const out: CpuByPid = new Map()
  for (const pid of pids) {
    const us = processCpuUs(pid, mainThreadOnly)
    if (us !== undefined) out.set(pid, us)
  }
  return out.size === 0 ? undefined : out
}

function sampleCpu (t: Target): CpuSample {
  const usage = process.cpuUsage()
  const proxies = t.proxyPids?.()
  const upstreams = t.upstreamPids?.() ?? [t.upstreamPid()].filter((pid): pid is number => pid !== undefined)
  return {
    proxy: proxies === undefined ? undefined : readCpu(proxies),
    proxyMain: proxies === undefined ? undefined : readCpu(proxies, true),
    upstream: readCpu(upstreams),
    redis: readCpu(t.redisPids?.() ?? []),
    driver: usage.user + usage.system
  }
}

/** CPU spent between two samples, summed over the processes alive at the second one. */
function spent (before: CpuByPid | undefined, after: CpuByPid | undefined): number | undefined {
  if (before === undefined || after === undefined) return undefined
  let us = 0
  for (const [pid, cpu] of after) us += cpu - (before.get(pid) ?? 0)
  return us
}

const samples: string[] = []
function noteFailure (what: string): void {
  if (samples.length < 10) samples.push(what)
}

/** The first failures of the run (at most 10), for the report. */
export function failureSamples (): readonly string[] {
  return samples
}

const runId = Math.random().toString(36).slice(2, 8)

/**
 * `total` calls with `concurrency` in flight. Every answer is checked against its own request's
 * unique message; a wrong or failed answer is a failure and counts neither in latency nor throughput.
 */
async function runPhase (t: Target, settings: Settings, tag: string, total: number, concurrency: number): Promise<PhaseResult> {
  const latencies = new Float64Array(total)
  let ok = 0
  let failures = 0
  let next = 0
  let inARow = 0
  let abandoned: string | undefined
  const fail = (what: string): void => {
    failures++
    noteFailure(what)
    if (++inARow >= MAX_CONSECUTIVE_FAILURES) abandoned ??= `${inARow} failures in a row, last: ${what}`
  }
  // A function, not the variable: fail() sets it from inside the loop body.
  const givenUp = (): boolean => abandoned !== undefined
  const worker = async (): Promise<void> => {
    while (next < total && !isAborted() && !givenUp()) {
      const i = next++
      // Fixed shape and length on every path, unique across the run.
      const message = `${runId}-${tag}-${String(i).padStart(6, '0')}`
      const started = performance.now()
      try {
        const answer = await t.driver.callTool(t.tool, { message }, settings.callTimeoutMs)
        const elapsed = performance.now() - started
        if (!answer.isError && answer.text === `Echo: ${message}`) {
          latencies[ok++] = elapsed
          inARow = 0
        } else {
          fail(`${t.id}: wrong answer for ${message}: ${JSON.stringify(answer.raw).slice(0, 200)}`)
        }
      } catch (err: unknown) {
        fail(`${t.id}: ${message}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  const rssPids = t.rssPids ?? []
  const peakReset = rssPids.length > 0 && rssPids.every(resetPeakRss)
  const before = sampleCpu(t)
  const t0 = performance.now()
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker))
  const elapsedMs = performance.now() - t0
  const after = sampleCpu(t)
  const peakRssKb = peakReset ? Math.max(...rssPids.map(pid => statusKb(pid, 'VmHWM') ?? 0)) : undefined
  const sorted = latencies.subarray(0, ok).sort()
  const perCall = (us: number | undefined): number | undefined => us === undefined || ok === 0 ? undefined : us / ok
  return {
    calls: total,
    ok,
    // Calls never sent because the phase was given up count as failed.
    failures: abandoned === undefined ? failures : total - ok,
    ...(abandoned === undefined ? {} : { abandoned }),
    elapsedMs,
    callsPerSec: ok / (elapsedMs / 1000),
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    proxyCpuUs: perCall(spent(before.proxy, after.proxy)),
    proxyMainThreadCpuUs: perCall(spent(before.proxyMain, after.proxyMain)),
    upstreamCpuUs: perCall(spent(before.upstream, after.upstream)),
    redisCpuUs: perCall(spent(before.redis, after.redis)),
    driverCpuUs: perCall(after.driver - before.driver) ?? Number.NaN,
    ...(peakRssKb === undefined ? {} : { peakRssKb })
  }
}

export interface RepResult {
  rep: number
  path: PathId
  warmupFailures: number
  seq: PhaseResult
  conc: Record<string, PhaseResult>
  /** Over the measured phases every path has (seq and the run's concurrency levels). */
  proxyCpuUsPerCall?: number
  proxyMainThreadCpuUsPerCall?: number
  upstreamCpuUsPerCall?: number
  redisCpuUsPerCall?: number
  driverCpuUsPerCall: number
  proxyPeakRssKb?: number
  /** Set when the path failed so persistently that the rest of it was given up. */
  abandoned?: string
}

function weightedCpu (phases: PhaseResult[], key: 'proxyCpuUs' | 'proxyMainThreadCpuUs' | 'upstreamCpuUs' | 'redisCpuUs' | 'driverCpuUs'): number | undefined {
  let us = 0
  let calls = 0
  for (const p of phases) {
    const v = p[key]
    if (v === undefined) return undefined
    us += v * p.ok
    calls += p.ok
  }
  return calls === 0 ? undefined : us / calls
}

/**
 * The lean driver's concurrent phases make this many times --calls: it runs 5–10× faster than the
 * SDK client, and a phase of 3,000 calls at 11,000 calls/s lasts 0.27 s, over which CPU read in
 * 10 ms ticks moves the per-call figure by ±4 µs and a difference such as d − c by twice that.
 */
export const LEAN_CALLS_FACTOR = 4

/** Calls in a concurrent phase: at least a few rounds of the in-flight level, so ramp-up does not dominate. */
export function phaseCalls (settings: Settings, concurrency: number, driver: DriverKind): number {
  return Math.max(settings.concCalls * (driver === 'lean' ? LEAN_CALLS_FACTOR : 1), 4 * concurrency)
}

/** A phase not run because an earlier one was given up: every call counts as failed. */
function skipped (total: number, why: string): PhaseResult {
  return { calls: total, ok: 0, failures: total, elapsedMs: 0, callsPerSec: Number.NaN, p50Ms: Number.NaN, p99Ms: Number.NaN, driverCpuUs: Number.NaN, abandoned: why }
}

/**
 * One repetition on one path; `code` keeps its messages unique across the run. Once a phase is
 * given up the rest of the repetition is skipped, and the result says why (`abandoned`).
 */
export async function runRep (t: Target, settings: Settings, rep: number, code: string): Promise<RepResult> {
  const tag = `${code}${rep}`
  let abandoned: string | undefined
  const phase = async (name: string, total: number, concurrency: number): Promise<PhaseResult> => {
    if (abandoned !== undefined) return skipped(total, abandoned)
    const r = await runPhase(t, settings, `${tag}-${name}`, total, concurrency)
    abandoned = r.abandoned
    return r
  }
  const warm = await phase('w', settings.warmup, 16)
  const seq = await phase('s', settings.seqCalls, 1)
  const conc: Record<string, PhaseResult> = {}
  for (const c of t.concurrency ?? settings.concurrency) conc[`c${c}`] = await phase(`c${c}`, phaseCalls(settings, c, t.driver.kind), c)
  // The same phases on every path, so the averages compare; the extra scaling levels are reported apart.
  const phases = [seq, ...settings.concurrency.flatMap(c => conc[`c${c}`] ?? [])]
  // The highest peak over this path's own phases; where the peaks could not be reset, the
  // processes' VmHWM since they started.
  const peaks = [warm, seq, ...Object.values(conc)].flatMap(p => p.peakRssKb ?? [])
  const rss = peaks.length > 0 ? peaks : (t.rssPids ?? []).map(pid => statusKb(pid, 'VmHWM') ?? 0)
  return {
    rep,
    path: t.id,
    warmupFailures: warm.failures,
    seq,
    conc,
    proxyCpuUsPerCall: weightedCpu(phases, 'proxyCpuUs'),
    proxyMainThreadCpuUsPerCall: weightedCpu(phases, 'proxyMainThreadCpuUs'),
    upstreamCpuUsPerCall: weightedCpu(phases, 'upstreamCpuUs'),
    redisCpuUsPerCall: weightedCpu(phases, 'redisCpuUs'),
    driverCpuUsPerCall: weightedCpu(phases, 'driverCpuUs') ?? Number.NaN,
    ...(abandoned === undefined ? {} : { abandoned }),
    proxyPeakRssKb: rss.length === 0 ? undefined : Math.max(...rss)
  }
}
