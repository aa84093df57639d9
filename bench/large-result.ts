// The large-result section: one session calls a tool that answers 3, 10 and then 30 MB of text
// (test/fixtures/hardship-server.ts `big`), while another session of the same gateway calls
// server-everything's echo one call after another. Per size: the gateway's peak RSS growth during
// the call (VmHWM reset through /proc/<pid>/clear_refs just before it; VmRSS sampled every 10 ms
// where the reset is refused), the big call's time, and the other session's echo p50/p99/max while
// it ran. Issue 29's targets (targets-29.ts): growth ≤ 2× the payload, echo p99 ≤ 50 ms, time
// linear in size.
import path from 'node:path'
import { ROOT, log, sleep } from './common.ts'
import { EVERYTHING_UPSTREAM, TSX_LOADER, startGatewayProcess } from './gateway.ts'
import { LeanClient } from './lean-client.ts'
import { onCleanup } from './lifecycle.ts'
import { resetPeakRss, statusKb } from './proc.ts'
import type { Settings } from './settings.ts'

const HARDSHIP = path.join(ROOT, 'test', 'fixtures', 'hardship-server.ts')
const MIB = 1024 * 1024
/** 3 MB: where the call's fixed costs show against 10 and 30 (one more gateway start per repetition). */
export const LARGE_SIZES_MB = [3, 10, 30] as const
const CALL_TIMEOUT_MS = 120_000
const RSS_SAMPLE_MS = 10
/** Echo calls made before the big one starts: the other session is warm, its connection open. */
const ECHO_WARMUP = 200

export interface LargeRun {
  mb: number
  /** Peak RSS during the call minus RSS before it, MiB. */
  peakGrowthMb: number
  /** peakGrowthMb ÷ the payload. */
  growthRatio: number
  callMs: number
  echoCalls: number
  echoP50Ms: number
  echoP99Ms: number
  echoMaxMs: number
}

export interface LargeResult { runs: LargeRun[], problems: string[] }

function percentile (sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number
}

export async function runLarge (settings: Settings, tmpDir: string): Promise<LargeResult> {
  const problems: string[] = []
  const runs: LargeRun[] = []
  // A fresh gateway for each measurement: memory a previous large call left in the heap would hide the growth.
  for (let rep = 1; rep <= settings.reps; rep++) {
    for (const mb of LARGE_SIZES_MB) {
      try {
        const run = await measureOnce(settings, tmpDir, mb)
        if (typeof run === 'string') problems.push(run)
        else {
          runs.push(run)
          log(`large rep ${rep} ${mb} MB: RSS +${run.peakGrowthMb.toFixed(0)} MiB (${run.growthRatio.toFixed(2)}× payload), call ${run.callMs.toFixed(0)} ms, other session's echo p50 ${run.echoP50Ms.toFixed(1)} p99 ${run.echoP99Ms.toFixed(1)} max ${run.echoMaxMs.toFixed(1)} ms over ${run.echoCalls} calls`)
        }
      } catch (err: unknown) {
        problems.push(err instanceof Error ? err.message : String(err))
      }
    }
  }
  return { runs, problems }
}

/** One gateway, warmed up, then one large call while the other session calls echo; a problem as a string. */
async function measureOnce (settings: Settings, tmpDir: string, mb: number): Promise<LargeRun | string> {
  const gw = await startGatewayProcess(settings, tmpDir, {
    file: 'large.yaml',
    upstreams: [EVERYTHING_UPSTREAM, { name: 'big', args: ['--import', TSX_LOADER, HARDSHIP], marker: HARDSHIP }]
  })
  onCleanup('large-result gateway', gw.stop)
  const open = async (): Promise<LeanClient> => await LeanClient.connect(gw.url, { connections: 2, timeoutMs: CALL_TIMEOUT_MS })
  const [bigClient, echoClient] = [await open(), await open()]
  try {
    let n = 0
    const echo = async (): Promise<number> => {
      const message = `large-${n++}`
      const started = performance.now()
      const result = await echoClient.request('tools/call', { name: 'everything__echo', arguments: { message } }) as { content?: Array<{ text?: string }> }
      if (result.content?.[0]?.text !== `Echo: ${message}`) throw new Error(`echo answered ${JSON.stringify(result).slice(0, 200)}`)
      return performance.now() - started
    }
    for (let i = 0; i < ECHO_WARMUP; i++) await echo()
    // Warm the big path too (JIT, pipe buffers), with a small answer.
    await bigClient.request('tools/call', { name: 'big__big', arguments: { bytes: MIB } })
    await sleep(500)
    const before = statusKb(gw.pid, 'VmRSS') ?? NaN
    const peakReset = resetPeakRss(gw.pid)
    let sampledPeak = before
    const sampler = setInterval(() => { sampledPeak = Math.max(sampledPeak, statusKb(gw.pid, 'VmRSS') ?? 0) }, RSS_SAMPLE_MS)
    const latencies: number[] = []
    const call = { done: false }
    const started = performance.now()
    // Counted, not parsed: this process also times the other session, which a 30 MB parse here would stall.
    const big = bigClient.requestCounted('tools/call', { name: 'big__big', arguments: { bytes: mb * MIB } }).finally(() => { call.done = true })
    const others = (async () => { while (!call.done) latencies.push(await echo()) })()
    const answer = await big
    const callMs = performance.now() - started
    await others
    clearInterval(sampler)
    const hwm = peakReset ? statusKb(gw.pid, 'VmHWM') ?? NaN : NaN
    // The text is mb MiB of "x" plus the envelope, as JSON or as one SSE event.
    if (answer.status !== 200 || answer.bytes < mb * MIB || answer.bytes > mb * MIB + 1024 || !answer.tail.includes('"}]}')) return `${mb} MB: the answer is not the whole text (HTTP ${answer.status}, ${answer.bytes} bytes)`
    const peakKb = Math.max(sampledPeak, Number.isNaN(hwm) ? 0 : hwm)
    const sorted = [...latencies].sort((a, b) => a - b)
    return {
      mb,
      peakGrowthMb: (peakKb - before) / 1024,
      growthRatio: (peakKb - before) / 1024 / mb,
      callMs,
      echoCalls: latencies.length,
      echoP50Ms: percentile(sorted, 50),
      echoP99Ms: percentile(sorted, 99),
      echoMaxMs: sorted.at(-1) ?? NaN
    }
  } finally {
    await bigClient.close()
    await echoClient.close()
    await gw.stop()
  }
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)] as number
}

/** Each figure's median over the repetitions at one size; undefined when that size gave no run. */
export function largeMedians (large: LargeResult | undefined, mb: number): LargeRun | undefined {
  const runs = large?.runs.filter(r => r.mb === mb) ?? []
  if (runs.length === 0) return undefined
  const m = (pick: (r: LargeRun) => number): number => median(runs.map(pick))
  return {
    mb,
    peakGrowthMb: m(r => r.peakGrowthMb),
    growthRatio: m(r => r.growthRatio),
    callMs: m(r => r.callMs),
    echoCalls: m(r => r.echoCalls),
    echoP50Ms: m(r => r.echoP50Ms),
    echoP99Ms: m(r => r.echoP99Ms),
    echoMaxMs: m(r => r.echoMaxMs)
  }
}

/**
 * The call's time per MB at `mb` ÷ at `base`: 1 when the time is proportional to the size, below 1
 * while fixed costs still weigh, 3 for 30 ÷ 10 MB if the time grew with the square of the size.
 */
export function perMbGrowth (large: LargeResult | undefined, mb: number, base: number): number | undefined {
  const a = largeMedians(large, mb)
  const b = largeMedians(large, base)
  return a === undefined || b === undefined ? undefined : (a.callMs / a.mb) / (b.callMs / b.mb)
}

/** The report's lines: per size, medians over the repetitions. */
export function largeSection (large: LargeResult | undefined): string[] {
  if (large === undefined) return []
  const out = ['a large tool result (lean driver; another session calls echo meanwhile; medians over repetitions)',
    'size MB  peak RSS growth MiB  × payload  call ms  ms per MB  other echo p50 ms  p99 ms  max ms  echo calls']
  for (const mb of LARGE_SIZES_MB) {
    const r = largeMedians(large, mb)
    if (r === undefined) continue
    out.push([String(mb).padEnd(7), r.peakGrowthMb.toFixed(1).padStart(19), r.growthRatio.toFixed(2).padStart(10), r.callMs.toFixed(0).padStart(8), (r.callMs / mb).toFixed(1).padStart(10),
      r.echoP50Ms.toFixed(1).padStart(18), r.echoP99Ms.toFixed(1).padStart(7), r.echoMaxMs.toFixed(1).padStart(7), String(r.echoCalls).padStart(11)].join(' '))
  }
  const growth = perMbGrowth(large, 30, 10)
  if (growth !== undefined) out.push(`time per MB, 30 MB ÷ 10 MB: ${growth.toFixed(2)} (linear: 1, or below while fixed costs weigh; quadratic: 3)`)
  for (const p of large.problems) out.push(`problem: ${p}`)
  return out
}
