// The idle section: the gateway's memory when nothing happens. (a) A gateway with 10 stdio upstreams:
// its RSS as soon as /readyz is 200, then "settled", once V8's memory reducer has shrunk the heap of
// the idle process (seen in its --trace-gc output). (b) A gateway with one upstream: its settled
// RSS, then N sessions opened with raw initialize POSTs, then its settled RSS again; the difference
// per session. Both gateways start together at the beginning of the run and settle side by side
// while the other paths are measured. The upstreams are quiet (no periodic notifications, unlike
// server-everything), so the gateways really are idle.
import path from 'node:path'
import { Pool } from 'undici'
import { isAborted } from './abort.ts'
import { ROOT, log, packageVersion, sleep } from './common.ts'
import { startGatewayProcess, type StartedGateway, type StdioUpstreamSpec } from './gateway.ts'
import { ACCEPT, REQUESTED_PROTOCOL_VERSION } from './lean-client.ts'
import { onCleanup } from './lifecycle.ts'
import { statusKb } from './proc.ts'
import type { Settings } from './settings.ts'
import { finishTrees, startTrees, type ProcessTreesResult, type TreesRun } from './idle-tree.ts'

/** A small real MCP server (the reference "memory" server: 9 tools, 1 resource, compiled JS, a dependency). */
const MEMORY_SERVER = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js')
export const IDLE_UPSTREAMS = 10
/** Settled: the lowest RSS among this many samples (one a second) after the memory reducer ran. */
const SETTLED_SAMPLES = 5
/** What --trace-gc prints for a full GC the memory reducer started. */
const REDUCER_GC = 'Mark-Compact (reduce)'
const SESSION_CONCURRENCY = 32
const SESSION_TIMEOUT_MS = 10_000
/** The whole opening of the sessions is bounded too; what is not sent by then counts as failed. */
const SESSIONS_LIMIT_MS = 180_000
const KIB_PER_MIB = 1024

/** The settled RSS and when it was read; reducerAtS: when the memory reducer ran (undefined: not within the bound). */
export interface SettledRss { mb: number, atS: number, reducerAtS?: number }

export interface IdleUpstreamsResult {
  upstreams: number
  server: string
  rssAtReadyMb?: number
  settled?: SettledRss
  /** VmRSS once a second, MiB, from samplesFromS seconds after ready (sampling starts after the other paths). */
  samplesFromS?: number
  samplesMb: number[]
}

export interface IdleSessionsResult {
  requested: number
  opened: number
  failures: number
  openS: number
  /** Settled before the sessions (seconds after ready) and after them (seconds after the last one opened). */
  before?: SettledRss
  after?: SettledRss
  perSessionKb?: number
  samplesAfterMb: number[]
}

export interface IdleResult { upstreams?: IdleUpstreamsResult, sessions?: IdleSessionsResult, trees?: ProcessTreesResult, problems: string[] }

/** The RSS samples of one gateway since `since`, and when its memory reducer was seen to run. */
interface Watched { gw: StartedGateway, since: number, samples: Array<{ s: number, kb: number }>, reducedAtS?: number, stop: () => void }

/**
 * Starts watching a gateway run with --trace-gc: V8's memory reducer, once the process looks idle
 * (8 s at the earliest, often 20–35 s after start here, sometimes not within a minute), runs one to
 * three full GCs that shrink the heap, the young generation's semi-spaces above all; --trace-gc
 * prints them as "Mark-Compact (reduce)".
 */
function watch (gw: StartedGateway, since: number, seenSoFar: boolean): Watched {
  const stdout = gw.process.child.stdout
  let tail = ''
  const w: Watched = { gw, since, samples: [], stop: () => { stdout?.off('data', onData) } }
  // The reducer may have run already (a slow start): then it counts from the start of the watch.
  if (seenSoFar && gw.process.output().includes(REDUCER_GC)) w.reducedAtS = 0
  const onData = (chunk: Buffer): void => {
    const text = tail + chunk.toString('utf8')
    if (w.reducedAtS === undefined && text.includes(REDUCER_GC)) w.reducedAtS = (performance.now() - w.since) / 1000
    tail = text.slice(-REDUCER_GC.length)
  }
  stdout?.on('data', onData)
  return w
}

/** Settled: the memory reducer ran, and SETTLED_SAMPLES samples have been taken since. */
function isSettled (w: Watched): boolean {
  const at = w.reducedAtS
  return at !== undefined && w.samples.filter(x => x.s > at).length >= SETTLED_SAMPLES
}

/** VmRSS of each gateway once a second until each has settled, at most `seconds` (stops on abort). */
async function sampleRss (watched: Watched[], seconds: number): Promise<void> {
  for (let i = 0; i < seconds && !isAborted() && !watched.every(isSettled); i++) {
    await sleep(1000)
    const now = performance.now()
    for (const w of watched) {
      if (isSettled(w)) continue
      const kb = statusKb(w.gw.pid, 'VmRSS')
      if (kb !== undefined) w.samples.push({ s: (now - w.since) / 1000, kb })
    }
  }
  for (const w of watched) w.stop()
}

/** The lowest of the samples after the memory reducer ran, else of the last SETTLED_SAMPLES. */
function settledOf (w: Watched): SettledRss | undefined {
  const at = w.reducedAtS
  const after = at === undefined ? [] : w.samples.filter(x => x.s > at)
  const last = after.length > 0 ? after : w.samples.slice(-SETTLED_SAMPLES)
  if (last.length === 0) return undefined
  const low = last.reduce((a, b) => b.kb < a.kb ? b : a)
  return { mb: low.kb / KIB_PER_MIB, atS: low.s, ...(at === undefined ? {} : { reducerAtS: at }) }
}

const mbOf = (w: Watched): number[] => w.samples.map(x => x.kb / KIB_PER_MIB)

function memoryUpstreams (tmpDir: string, count: number, tag: string): StdioUpstreamSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `memory-${i}`,
    args: [MEMORY_SERVER],
    marker: MEMORY_SERVER,
    // Its knowledge graph file, read and written only by its tools (none are called here).
    env: { MEMORY_FILE_PATH: path.join(tmpDir, `memory-${tag}-${i}.jsonl`) }
  }))
}

/** N initialize POSTs, SESSION_CONCURRENCY at a time; each answer must be 200 with an Mcp-Session-Id. */
async function openSessions (url: URL, count: number, problems: string[]): Promise<{ opened: number, failures: number, openS: number }> {
  const pool = new Pool(url.origin, { connections: SESSION_CONCURRENCY, pipelining: 1, headersTimeout: SESSION_TIMEOUT_MS, bodyTimeout: SESSION_TIMEOUT_MS, connect: { timeout: SESSION_TIMEOUT_MS } })
  const headers = { 'content-type': 'application/json', accept: ACCEPT }
  const params = { protocolVersion: REQUESTED_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'switchboard-bench-idle', version: '0.0.0' } }
  const deadline = performance.now() + SESSIONS_LIMIT_MS
  let next = 0
  let opened = 0
  const failed: string[] = []
  const worker = async (): Promise<void> => {
    while (next < count && !isAborted() && performance.now() < deadline && failed.length < 10) {
      const id = next++
      try {
        const res = await pool.request({ path: url.pathname, method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'initialize', params }) })
        const body = await res.body.text()
        const session = res.headers['mcp-session-id']
        if (res.statusCode === 200 && typeof session === 'string' && session !== '') opened++
        else failed.push(`initialize ${id}: HTTP ${res.statusCode}, Mcp-Session-Id ${String(session)}: ${body.slice(0, 160)}`)
      } catch (err) {
        failed.push(`initialize ${id}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  const t0 = performance.now()
  try {
    await Promise.all(Array.from({ length: Math.min(SESSION_CONCURRENCY, count) }, worker))
  } finally {
    await Promise.race([pool.close().catch(() => {}), sleep(2_000)])
    await pool.destroy().catch(() => {})
  }
  const failures = count - opened
  if (failures > 0) problems.push(`sessions: ${failures} of ${count} not opened; first: ${failed[0] ?? 'stopped early (time limit or abort)'}`)
  return { opened, failures, openS: (performance.now() - t0) / 1000 }
}

async function start (settings: Settings, tmpDir: string, file: string, upstreams: StdioUpstreamSpec[]): Promise<StartedGateway> {
  const gw = await startGatewayProcess(settings, tmpDir, { file, upstreams, nodeArgs: ['--trace-gc'] })
  onCleanup(`switchboard ${file}`, gw.stop)
  return gw
}

/** The idle gateways, started at the beginning of the run and left alone until finishIdle(). */
export interface IdleRun { many?: Watched, one?: Watched, trees?: TreesRun, problems: string[] }

/**
 * Starts both idle gateways and begins watching for their memory reducer. Started first thing, so
 * they have the whole run to go idle and settle (their own idleness is what the reducer waits for;
 * the load of the other paths on the machine only delays its timers), at no cost in wall time.
 */
export async function startIdle (settings: Settings, tmpDir: string): Promise<IdleRun> {
  const problems: string[] = []
  const [many, one, trees] = await Promise.allSettled([
    start(settings, tmpDir, 'switchboard-bench-idle-10.yaml', memoryUpstreams(tmpDir, IDLE_UPSTREAMS, 'idle')),
    start(settings, tmpDir, 'switchboard-bench-idle-sessions.yaml', memoryUpstreams(tmpDir, 1, 'sessions')),
    // Issue 30: the whole process tree, gateway alone, ten eager and ten lazy upstreams.
    startTrees(settings, tmpDir, memoryUpstreams(tmpDir, IDLE_UPSTREAMS, 'tree'))
  ])
  const ready = performance.now()
  for (const [what, r] of [['10 upstreams', many], ['sessions', one]] as const) {
    if (r.status === 'rejected') problems.push(`idle (${what}) NOT measured: ${r.reason instanceof Error ? r.reason.message.split('\n')[0] as string : String(r.reason)}`)
  }
  return {
    many: many.status === 'fulfilled' ? watch(many.value, ready, true) : undefined,
    one: one.status === 'fulfilled' ? watch(one.value, ready, true) : undefined,
    ...(trees.status === 'fulfilled' ? { trees: trees.value } : {}),
    problems
  }
}

/** Samples until both have settled (bounded), then the sessions on the second gateway; stops both. */
export async function finishIdle (settings: Settings, run: IdleRun): Promise<IdleResult> {
  const { many, one, problems } = run
  log(`idle: sampling RSS until it settles, at most ${settings.idleSettleS} s`)
  await sampleRss([many, one].filter((w): w is Watched => w !== undefined), settings.idleSettleS)
  const result: IdleResult = { problems }
  if (run.trees !== undefined) result.trees = await finishTrees(run.trees)
  if (many !== undefined) {
    const atReady = many.gw.rssAtReadyKb
    result.upstreams = {
      upstreams: IDLE_UPSTREAMS,
      server: `server-memory ${packageVersion('@modelcontextprotocol/server-memory')}`,
      rssAtReadyMb: atReady === undefined ? undefined : atReady / KIB_PER_MIB,
      settled: settledOf(many),
      samplesFromS: many.samples[0]?.s,
      samplesMb: mbOf(many)
    }
    await many.gw.stop()
  }
  if (one !== undefined && !isAborted()) {
    const before = settledOf(one)
    log(`idle: opening ${settings.idleSessions} sessions, then sampling RSS until it settles, at most ${settings.idleSettleS} s`)
    const opening = await openSessions(one.gw.url, settings.idleSessions, problems)
    const after = watch(one.gw, performance.now(), false)
    await sampleRss([after], settings.idleSettleS)
    const settledAfter = settledOf(after)
    result.sessions = {
      requested: settings.idleSessions,
      ...opening,
      before,
      after: settledAfter,
      perSessionKb: before === undefined || settledAfter === undefined || opening.opened === 0 ? undefined : (settledAfter.mb - before.mb) * KIB_PER_MIB / opening.opened,
      samplesAfterMb: mbOf(after)
    }
    await one.gw.stop()
  }
  for (const p of problems) log(p)
  return result
}
