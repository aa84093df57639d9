// Switchboard overhead benchmark: the same SDK client drives the same upstream (server-everything's
// `echo`) on the same machine in one run, directly and through the gateway, interleaved over several
// repetitions; medians per path, then ratios. See bench/README.md for how to read the output.
import { mkdirSync } from 'node:fs'
import os from 'node:os'
import { isAborted } from './abort.ts'
import { log } from './common.ts'
import { hasHaproxy } from './haproxy.ts'
import { abort, cleanup, makeTmpDir } from './lifecycle.ts'
import { startDirectHttp, startDirectStdio, startGateway, startScaleOut } from './paths.ts'
import type { PathId } from './target.ts'
import { runRep, type RepResult } from './phase.ts'
import { startRedis } from './redis.ts'
import { fmt, report, summarize, writeResults } from './report.ts'
import { parseSettings } from './settings.ts'

// The SDK's Streamable HTTP client hands one transport-wide AbortSignal to every fetch; undici adds a
// listener to it per request and they pile up faster than they are released, so Node warns past 1500
// ("MaxListenersExceededWarning ... abort listeners added to [AbortSignal]"). That is the driver's
// business and the same on both HTTP paths: counted and reported once, not printed per call.
let abortListenerWarnings = 0
function filterWarnings (): void {
  process.removeAllListeners('warning')
  process.on('warning', (w: Error) => {
    if (w.name === 'MaxListenersExceededWarning' && w.message.includes('abort listeners added to [AbortSignal]')) {
      abortListenerWarnings++
      return
    }
    process.stderr.write(`(node) ${w.name}: ${w.message}\n`)
  })
}

async function main (): Promise<void> {
  const settings = parseSettings(process.argv.slice(2))
  filterWarnings()
  const limit = setTimeout(() => { abort(`the whole run exceeded ${settings.limitMs / 1000} s`, 2) }, settings.limitMs)
  limit.unref()
  process.once('SIGINT', () => { abort('SIGINT', 130) })
  process.once('SIGTERM', () => { abort('SIGTERM', 143) })
  if (process.platform !== 'linux') throw new Error('the bench reads /proc; it runs on Linux only')
  if (settings.cpuProfDir !== undefined) mkdirSync(settings.cpuProfDir, { recursive: true })

  const wallStart = performance.now()
  const loadBefore = os.loadavg()
  const tmpDir = makeTmpDir()
  log(`starting paths (reps ${settings.reps}, warm-up ${settings.warmup}, seq ${settings.seqCalls}, concurrent ${settings.concCalls} × ${settings.concurrency.join('/')})`)
  const started = [await startDirectStdio(), await startDirectHttp(), await startGateway(settings, tmpDir), await startGateway(settings, tmpDir, 'secured')]
  const redisUrl = await startRedis()
  if (redisUrl === undefined) log('redis-server not installed: the sessions-in-Redis path (e) is NOT measured')
  else started.push(await startGateway(settings, tmpDir, 'redis', redisUrl))
  if (redisUrl !== undefined && hasHaproxy()) started.push(await startScaleOut(settings, tmpDir, 1, redisUrl), await startScaleOut(settings, tmpDir, 3, redisUrl))
  else log('haproxy or redis-server not installed: the scale-out paths (f, g) are NOT measured')
  log(`started: direct stdio pid ${started[0]?.upstreamPid()}, direct HTTP pid ${started[1]?.upstreamPid()}, gateway pid ${started[2]?.gatewayPid} (upstream ${started[2]?.upstreamPid()})`)

  const results = new Map<PathId, RepResult[]>()
  for (let rep = 1; rep <= settings.reps; rep++) {
    for (const t of started) {
      if (isAborted()) return
      const r = await runRep(t, settings, rep)
      if (isAborted()) return
      const list = results.get(t.id) ?? []
      list.push(r)
      results.set(t.id, list)
      log(`rep ${rep} ${t.id.padEnd(12)} seq p50 ${fmt(r.seq.p50Ms, 3)} ms p99 ${fmt(r.seq.p99Ms, 3)} ms | c16 ${fmt(r.conc.c16?.callsPerSec, 0)}/s | c64 ${fmt(r.conc.c64?.callsPerSec, 0)}/s | CPU µs/call driver ${fmt(r.driverCpuUsPerCall, 0)} upstream ${fmt(r.upstreamCpuUsPerCall, 0)} gateway ${fmt(r.gatewayCpuUsPerCall, 0)}`)
    }
  }
  const summaries = started.map(t => summarize(t, results.get(t.id) ?? []))
  const wallMs = performance.now() - wallStart
  const loadAfter = os.loadavg()
  const { text, ratios, targets: verdicts } = report(settings, summaries, wallMs, { before: loadBefore, after: loadAfter })
  process.stdout.write(text + '\n')
  if (abortListenerWarnings > 0) log(`note: ${abortListenerWarnings} MaxListenersExceededWarning(s) from the SDK HTTP client's shared AbortSignal were suppressed (driver side)`)

  writeResults({ settings, load: { before: loadBefore, after: loadAfter }, wallMs, summaries, ratios, targets: verdicts, reps: results, abortListenerWarnings })
  if (summaries.some(s => s.failures > 0)) process.exitCode = 1
}

main().then(async () => {
  await cleanup()
}, async (err: unknown) => {
  process.stderr.write(`[bench] failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exitCode = 1
  await cleanup()
}).finally(() => {
  // Nothing we started may keep the process alive; exit explicitly once everything is stopped.
  process.exit(process.exitCode ?? 0)
})
