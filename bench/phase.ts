// Measuring one path: warm-up, sequential and concurrent phases of verified echo calls, with the
// CPU time of the driver, the gateway(s) and the upstream(s) read around each measured phase.
import type { CallToolResult } from '@modelcontextprotocol/client'
import { isAborted } from './abort.ts'
import type { PathId, Target } from './target.ts'
import { processCpuUs, statusKb } from './proc.ts'
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
  /** CPU time per successful call, µs; undefined when not measurable. */
  gatewayCpuUs?: number
  /** The same, main thread only (the rest is GC helpers, libuv pool, tsx's loader thread). */
  gatewayMainThreadCpuUs?: number
  upstreamCpuUs?: number
  driverCpuUs: number
}

interface CpuSample { gateway?: number, gatewayMain?: number, upstream?: number, driver: number }

function sumCpu (pids: number[], mainThreadOnly = false): number | undefined {
  let total = 0
  for (const pid of pids) {
    const us = processCpuUs(pid, mainThreadOnly)
    if (us === undefined) return undefined
    total += us
  }
  return total
}

function sampleCpu (t: Target): CpuSample {
  const usage = process.cpuUsage()
  const gateways = t.replicaPids ?? (t.gatewayPid === undefined ? undefined : [t.gatewayPid])
  return {
    gateway: gateways === undefined ? undefined : sumCpu(gateways),
    gatewayMain: gateways === undefined ? undefined : sumCpu(gateways, true),
    upstream: t.upstreamPids === undefined ? processCpuUs(t.upstreamPid()) : sumCpu(t.upstreamPids()),
    driver: usage.user + usage.system
  }
}

const samples: string[] = []
function noteFailure (what: string): void {
  if (samples.length < 10) samples.push(what)
}

/** The first failures of the run (at most 10), for the report. */
export function failureSamples (): readonly string[] {
  return samples
}

function textOf (result: CallToolResult): string | undefined {
  const first = (result.content as unknown[] | undefined)?.[0] as { type?: unknown, text?: unknown } | undefined
  return first?.type === 'text' && typeof first.text === 'string' ? first.text : undefined
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
  const worker = async (): Promise<void> => {
    while (next < total && !isAborted()) {
      const i = next++
      // Fixed shape and length on every path, unique across the run.
      const message = `${runId}-${tag}-${String(i).padStart(6, '0')}`
      const started = performance.now()
      try {
        const result = await t.client.callTool({ name: t.tool, arguments: { message } }, { timeout: settings.callTimeoutMs })
        const elapsed = performance.now() - started
        const text = textOf(result)
        if (result.isError !== true && text === `Echo: ${message}`) {
          latencies[ok++] = elapsed
        } else {
          failures++
          noteFailure(`${t.id}: wrong answer for ${message}: ${JSON.stringify(result).slice(0, 200)}`)
        }
      } catch (err: unknown) {
        failures++
        noteFailure(`${t.id}: ${message}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  const before = sampleCpu(t)
  const t0 = performance.now()
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker))
  const elapsedMs = performance.now() - t0
  const after = sampleCpu(t)
  const sorted = latencies.subarray(0, ok).sort()
  const perCall = (a?: number, b?: number): number | undefined => a === undefined || b === undefined || ok === 0 ? undefined : (b - a) / ok
  return {
    calls: total,
    ok,
    failures,
    elapsedMs,
    callsPerSec: ok / (elapsedMs / 1000),
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    gatewayCpuUs: perCall(before.gateway, after.gateway),
    gatewayMainThreadCpuUs: perCall(before.gatewayMain, after.gatewayMain),
    upstreamCpuUs: perCall(before.upstream, after.upstream),
    driverCpuUs: perCall(before.driver, after.driver) as number
  }
}

export interface RepResult {
  rep: number
  path: PathId
  warmupFailures: number
  seq: PhaseResult
  conc: Record<string, PhaseResult>
  /** Over the measured phases (seq + every concurrency level). */
  gatewayCpuUsPerCall?: number
  gatewayMainThreadCpuUsPerCall?: number
  upstreamCpuUsPerCall?: number
  driverCpuUsPerCall: number
  gatewayPeakRssKb?: number
}

function weightedCpu (phases: PhaseResult[], key: 'gatewayCpuUs' | 'gatewayMainThreadCpuUs' | 'upstreamCpuUs' | 'driverCpuUs'): number | undefined {
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

export async function runRep (t: Target, settings: Settings, rep: number): Promise<RepResult> {
  const code = `${t.id[0] === 'g' ? 'g' : t.id === 'direct-http' ? 'h' : 's'}${rep}`
  const warm = await runPhase(t, settings, `${code}-w`, settings.warmup, 16)
  const seq = await runPhase(t, settings, `${code}-s`, settings.seqCalls, 1)
  const conc: Record<string, PhaseResult> = {}
  for (const c of settings.concurrency) conc[`c${c}`] = await runPhase(t, settings, `${code}-c${c}`, settings.concCalls, c)
  const phases = [seq, ...Object.values(conc)]
  return {
    rep,
    path: t.id,
    warmupFailures: warm.failures,
    seq,
    conc,
    gatewayCpuUsPerCall: weightedCpu(phases, 'gatewayCpuUs'),
    gatewayMainThreadCpuUsPerCall: weightedCpu(phases, 'gatewayMainThreadCpuUs'),
    upstreamCpuUsPerCall: weightedCpu(phases, 'upstreamCpuUs'),
    driverCpuUsPerCall: weightedCpu(phases, 'driverCpuUs') as number,
    gatewayPeakRssKb: Math.max(...(t.replicaPids ?? [t.gatewayPid]).map(pid => statusKb(pid, 'VmHWM') ?? 0))
  }
}
