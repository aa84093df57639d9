// Switchboard overhead benchmark: the same drivers (the SDK client, and a lean undici client) drive
// the same upstream (server-everything's `echo`) on the same machine in one run, directly, through
// the gateway and through its peers, interleaved over several repetitions; medians per path, then
// ratios; then tools/list over big catalogs, idle memory, and the issue's targets judged from this
// run. See bench/README.md for how to read the output.
import { mkdirSync } from 'node:fs'
import os from 'node:os'
import { isAborted } from './abort.ts'
import { runCatalog } from './catalog.ts'
import { log } from './common.ts'
import { hasHaproxy } from './haproxy.ts'
import { finishIdle, startIdle } from './idle.ts'
import { runLarge } from './large-result.ts'
import { abort, cleanup, makeTmpDir } from './lifecycle.ts'
import { startDirectHttp, startDirectStdio, startGateway, startGatewayHttpUpstream, startHttpFloor, startScaleOut } from './paths.ts'
import { peerVersion, startPeer } from './peers.ts'
import { LEAN_CALLS_FACTOR, runRep, type RepResult } from './phase.ts'
import { startRedis, startRedisCluster } from './redis.ts'
import { report, writeResults } from './report.ts'
import { driversOf, parseSettings, type PathLetter, type Selectable, type Settings } from './settings.ts'
import { fmt, summarize } from './summary.ts'
import type { DriverKind, PathId, Target } from './target.ts'

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

/** Starts what --paths selects; a peer that fails to start is reported loudly and left out. */
async function startSelected (settings: Settings, tmpDir: string, peerProblems: string[]): Promise<Target[]> {
  const want = (x: Selectable): boolean => settings.paths.has(x)
  const drivers = (letter: PathLetter): DriverKind[] => driversOf(settings.paths, letter)
  const started: Target[] = []
  if (drivers('a').length > 0) started.push(...await startDirectStdio(settings, drivers('a')))
  if (drivers('b').length > 0) started.push(...await startDirectHttp(settings, drivers('b')))
  if (drivers('c').length > 0) started.push(...await startGateway(settings, tmpDir, 'plain', drivers('c')))
  if (drivers('d').length > 0) started.push(...await startGateway(settings, tmpDir, 'secured', drivers('d')))
  if (want('e') || want('f') || want('g')) {
    const redis = await startRedis()
    if (redis === undefined) log('redis-server not installed: the sessions-in-Redis paths (e, f, g) are NOT measured')
    else {
      const redisUrl = redis.url
      if (want('e')) started.push(...await startGateway(settings, tmpDir, 'redis', drivers('e'), { redisUrl }))
      if (!hasHaproxy()) log('haproxy not installed: the scale-out paths (f, g) are NOT measured')
      else {
        if (want('f')) started.push(await startScaleOut(settings, tmpDir, 1, { url: redisUrl, pids: [redis.pid] }))
        if (want('g')) started.push(await startScaleOut(settings, tmpDir, 3, { url: redisUrl, pids: [redis.pid] }))
      }
    }
  }
  if (want('i')) {
    const cluster = hasHaproxy() ? await startRedisCluster(tmpDir) : undefined
    if (cluster === undefined) log('haproxy, redis-server or redis-cli not installed: the cluster path (i) is NOT measured')
    else started.push(await startScaleOut(settings, tmpDir, 3, { cluster: cluster.seeds, pids: cluster.pids }))
  }
  if (drivers('h').length > 0) started.push(...await startGatewayHttpUpstream(settings, tmpDir, drivers('h')))
  for (const peer of ['supergateway', 'supergateway-sse', 'mcp-proxy'] as const) {
    if (!want(peer === 'supergateway-sse' ? 'supergateway' : peer)) continue
    try {
      started.push(...await startPeer(settings, peer, ['sdk', 'lean']))
    } catch (err) {
      if (isAborted()) throw err
      const message = `${peer} ${peerVersion(peer)} failed to start: ${err instanceof Error ? err.message : String(err)}`
      peerProblems.push(message.split('\n')[0] as string)
      log(`!!!!!!!! ${message}`)
    }
  }
  if (want('floor')) {
    try {
      // The lean driver only: the SDK client's own cost would hide the floor.
      started.push(...await startPeer(settings, 'floor', ['lean']))
    } catch (err) {
      if (isAborted()) throw err
      log(`!!!!!!!! the floor proxy failed to start: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  if (want('hfloor')) {
    try {
      started.push(...await startHttpFloor(settings))
    } catch (err) {
      if (isAborted()) throw err
      log(`!!!!!!!! the HTTP floor proxy failed to start: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  return started
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
  log(`starting paths ${[...settings.paths].join(',')} (reps ${settings.reps}, warm-up ${settings.warmup}, seq ${settings.seqCalls}, concurrent ${settings.concCalls} (lean ${settings.concCalls * LEAN_CALLS_FACTOR}) × ${settings.concurrency.join('/')})`)
  const peerProblems: string[] = []
  // First: the idle gateways get the whole run to go idle and settle (see idle.ts).
  const idleRun = settings.paths.has('idle') ? await startIdle(settings, tmpDir) : undefined
  const started = await startSelected(settings, tmpDir, peerProblems)
  log(`started: ${started.map(t => `${t.id} (${t.driver.kind})`).join(', ')}`)

  const results = new Map<PathId, RepResult[]>()
  const givenUp = new Set<Target>()
  for (let rep = 1; rep <= settings.reps; rep++) {
    for (const [i, t] of started.entries()) {
      if (isAborted()) return
      if (givenUp.has(t)) continue
      const r = await runRep(t, settings, rep, `p${i}r`)
      if (r.abandoned !== undefined) {
        givenUp.add(t)
        log(`!!!!!!!! ${t.id} (${t.driver.kind}) given up for the rest of the run: ${r.abandoned}`)
      }
      if (isAborted()) return
      const list = results.get(t.id) ?? []
      list.push(r)
      results.set(t.id, list)
      const conc = Object.entries(r.conc).map(([k, p]) => `${k} ${fmt(p.callsPerSec, 0)}/s`).join(' | ')
      log(`rep ${rep} ${t.id.padEnd(21)} seq p50 ${fmt(r.seq.p50Ms, 3)} ms p99 ${fmt(r.seq.p99Ms, 3)} ms | ${conc} | CPU µs/call driver ${fmt(r.driverCpuUsPerCall, 0)} upstream ${fmt(r.upstreamCpuUsPerCall, 0)} proxy ${fmt(r.proxyCpuUsPerCall, 0)}`)
    }
  }
  const catalog = settings.paths.has('catalog') ? await runCatalog(settings, tmpDir) : { results: [], problems: [] }
  if (isAborted()) return
  const large = settings.paths.has('large') ? await runLarge(settings, tmpDir) : undefined
  if (isAborted()) return
  const idle = idleRun === undefined ? undefined : await finishIdle(settings, idleRun)
  if (isAborted()) return
  const summaries = started.map(t => summarize(t, results.get(t.id) ?? []))
  const wallMs = performance.now() - wallStart
  const load = { before: loadBefore, after: os.loadavg() }
  const extras = { catalog: catalog.results, catalogProblems: catalog.problems, peerProblems, idle, large }
  const rep = report(settings, summaries, extras, wallMs, load)
  process.stdout.write(rep.text + '\n')
  if (abortListenerWarnings > 0) log(`note: ${abortListenerWarnings} MaxListenersExceededWarning(s) from the SDK HTTP client's shared AbortSignal were suppressed (driver side)`)

  writeResults({ settings, load, wallMs, summaries, report: rep, extras, reps: results, abortListenerWarnings })
  // The peers are measured for comparison: their failures are reported loudly but do not fail the run.
  const ownFailures = summaries.filter(s => s.role !== 'peer').some(s => s.failures > 0) ||
    catalog.problems.length > 0 || catalog.results.some(r => r.firstPage.failures > 0 || (r.search?.failures ?? 0) > 0) || (idle?.problems.length ?? 0) > 0 || (large?.problems.length ?? 0) > 0
  if (ownFailures) process.exitCode = 1
  const peerFailures = summaries.filter(s => s.role === 'peer' && s.failures > 0)
  for (const s of peerFailures) log(`!!!!!!!! peer ${s.label} (${s.driver}): ${s.failures} call(s) failed (does not change the exit code)`)
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
