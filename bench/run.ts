// Switchboard overhead benchmark: the same SDK client drives the same upstream (server-everything's
// `echo`) on the same machine in one run, directly and through the gateway, interleaved over several
// repetitions; medians per path, then ratios. See bench/README.md for how to read the output.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { Socket, createServer } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { hasHaproxy, startHaproxy } from './haproxy.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const EVERYTHING = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
const LOOPBACK_SHIM = path.join(ROOT, 'bench', 'loopback-listen.mjs')
const GATEWAY_MAIN = path.join(ROOT, 'src', 'main.ts')
const TSX_LOADER = import.meta.resolve('tsx')
const RESULTS_FILE = path.join(ROOT, '.bench-results', 'latest.json')

const TARGET_GATEWAY_CPU_US = 100
const TARGET_ADDED_P50_MS = 0.5
// Issue 11: sessions shared through Redis may add at most this at the median over sessions in memory.
const TARGET_REDIS_ADDED_P50_MS = 0.2
const START_TIMEOUT_MS = 30_000
const STOP_GRACE_MS = 5_000
const POLL_MS = 50

// ---------------------------------------------------------------------------------------------
// Settings

interface Settings {
  reps: number
  warmup: number
  seqCalls: number
  concCalls: number
  concurrency: number[]
  callTimeoutMs: number
  limitMs: number
  quick: boolean
  cpuProfDir?: string
}

const USAGE = `usage: npm run bench -- [--quick] [--reps N] [--warmup N] [--seq N] [--calls N] [--limit-s N] [--cpu-prof-dir DIR]
  --quick          small counts, one repetition unless --reps is given (smoke run, ~20 s)
  --reps N         repetitions; paths are interleaved a,b,c,a,b,c,... (default 3; env BENCH_REPS)
  --warmup N       warm-up calls per path per repetition (default 500)
  --seq N          sequential calls measured for p50/p99 (default 1000)
  --calls N        calls per concurrent phase, 16 and 64 in flight (default 3000)
  --limit-s N      hard bound on the whole run; everything is stopped when it passes (default 600)
  --cpu-prof-dir D run the gateway under node --cpu-prof, writing its .cpuprofile into D
env: BENCH_QUICK=1, BENCH_REPS=N`

function positiveInt (value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${value}`)
  return n
}

function parseSettings (argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      reps: { type: 'string' },
      warmup: { type: 'string' },
      seq: { type: 'string' },
      calls: { type: 'string' },
      'limit-s': { type: 'string' },
      'cpu-prof-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) {
    process.stdout.write(USAGE + '\n')
    process.exit(0)
  }
  const quick = values.quick === true || process.env.BENCH_QUICK === '1'
  const reps = positiveInt(values.reps, '--reps') ?? positiveInt(process.env.BENCH_REPS, 'BENCH_REPS') ?? (quick ? 1 : 3)
  return {
    quick,
    reps,
    warmup: positiveInt(values.warmup, '--warmup') ?? (quick ? 100 : 500),
    seqCalls: positiveInt(values.seq, '--seq') ?? (quick ? 200 : 1000),
    concCalls: positiveInt(values.calls, '--calls') ?? (quick ? 500 : 3000),
    concurrency: [16, 64],
    callTimeoutMs: 10_000,
    limitMs: (positiveInt(values['limit-s'], '--limit-s') ?? 600) * 1000,
    cpuProfDir: values['cpu-prof-dir'] === undefined ? undefined : path.resolve(values['cpu-prof-dir'])
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

function log (line: string): void {
  process.stderr.write(`[bench] ${line}\n`)
}

/** Polls until check() gives a value; bounded by timeoutMs. */
async function waitFor<T> (what: string, timeoutMs: number, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  const maxPolls = Math.ceil(timeoutMs / POLL_MS) + 1
  for (let i = 0; i < maxPolls; i++) {
    if (aborted !== undefined) throw new Error(`aborted while waiting for ${what}: ${aborted}`)
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) break
    await sleep(POLL_MS)
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
}

function percentile (sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)))
  return sorted[rank - 1] as number
}

function median (values: number[]): number {
  const v = values.filter(x => Number.isFinite(x)).sort((a, b) => a - b)
  if (v.length === 0) return Number.NaN
  const mid = v.length >> 1
  return v.length % 2 === 1 ? v[mid] as number : ((v[mid - 1] as number) + (v[mid] as number)) / 2
}

function round (x: number, digits: number): number {
  if (!Number.isFinite(x)) return x
  const f = 10 ** digits
  return Math.round(x * f) / f
}

// ---------------------------------------------------------------------------------------------
// /proc: CPU time, peak RSS, children, listening sockets (Linux only)

const CLK_TCK = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5_000 }).trim())
    return Number.isInteger(n) && n > 0 ? n : 100
  } catch {
    return 100
  }
})()

function statFields (pid: number, file = `/proc/${pid}/stat`): string[] | undefined {
  try {
    const stat = readFileSync(file, 'utf8')
    // Fields after "pid (comm) ": state is field 3, so field N is index N - 3.
    return stat.slice(stat.lastIndexOf(')') + 2).trim().split(' ')
  } catch {
    return undefined
  }
}

/**
 * The process's own user+system CPU time in µs (fields 14 and 15; children's time is excluded),
 * all threads, or only the main (JavaScript) thread.
 */
function processCpuUs (pid: number | undefined, mainThreadOnly = false): number | undefined {
  if (pid === undefined) return undefined
  const f = statFields(pid, mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : undefined)
  if (f === undefined) return undefined
  return (Number(f[11]) + Number(f[12])) * 1e6 / CLK_TCK
}

function isAlive (pid: number | undefined): boolean {
  if (pid === undefined) return false
  const f = statFields(pid)
  return f !== undefined && f[0] !== 'Z' && f[0] !== 'X'
}

function statusKb (pid: number | undefined, field: string): number | undefined {
  if (pid === undefined) return undefined
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m?.[1] === undefined ? undefined : Number(m[1])
  } catch {
    return undefined
  }
}

function cmdlineOf (pid: number): string {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ') } catch { return '' }
}

function childrenOf (pid: number): number[] {
  const out: number[] = []
  let entries: string[] = []
  try { entries = readdirSync('/proc') } catch { return out }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const f = statFields(Number(entry))
    if (f !== undefined && Number(f[1]) === pid && f[0] !== 'Z') out.push(Number(entry))
  }
  return out
}

function decodeProcAddress (hex: string): string {
  if (hex.length === 8) return [6, 4, 2, 0].map(i => parseInt(hex.slice(i, i + 2), 16)).join('.')
  const words: string[] = []
  for (let w = 0; w < 4; w++) {
    const word = hex.slice(w * 8, w * 8 + 8)
    const bytes = [6, 4, 2, 0].map(i => word.slice(i, i + 2)).join('')
    words.push(bytes.slice(0, 4), bytes.slice(4, 8))
  }
  return words.map(x => parseInt(x, 16).toString(16)).join(':')
}

function isLoopbackAddress (address: string): boolean {
  return address.startsWith('127.') || address === '0:0:0:0:0:0:0:1' || /^0:0:0:0:0:ffff:7f/.test(address)
}

/** TCP sockets the process is listening on, from its fds and /proc/net/tcp{,6}. */
function listeningSockets (pid: number): Array<{ address: string, port: number }> {
  const inodes = new Set<string>()
  let fds: string[] = []
  try { fds = readdirSync(`/proc/${pid}/fd`) } catch { return [] }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m?.[1] !== undefined) inodes.add(m[1])
    } catch { /* fd closed meanwhile */ }
  }
  const out: Array<{ address: string, port: number }> = []
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try { text = readFileSync(file, 'utf8') } catch { continue }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9] as string)) continue
      const [addr, port] = (f[1] as string).split(':')
      out.push({ address: decodeProcAddress(addr as string), port: parseInt(port as string, 16) })
    }
  }
  return out
}

/** The one loopback TCP port the process listens on; refuses a non-loopback bind. */
async function loopbackPortOf (pid: number, what: string, alive: () => boolean): Promise<number> {
  return await waitFor(`${what} to listen`, START_TIMEOUT_MS, () => {
    if (!alive()) throw new Error(`${what} exited before listening`)
    const sockets = listeningSockets(pid)
    const wide = sockets.find(s => !isLoopbackAddress(s.address))
    if (wide !== undefined) throw new Error(`${what} listens on ${wide.address}:${wide.port}, not loopback only`)
    return sockets[0]?.port
  })
}

// ---------------------------------------------------------------------------------------------
// Child processes we start ourselves (server-everything over HTTP, the gateway)

interface Managed {
  name: string
  child: ChildProcess
  pid: number
  output: () => string
  alive: () => boolean
  stop: () => Promise<void>
}

const managed = new Set<Managed>()
/** Pids started by something we started (the gateway's upstream): killed at the end if still alive. */
const strays = new Set<number>()

function startProcess (name: string, args: string[], env: NodeJS.ProcessEnv): Managed {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  if (child.pid === undefined) throw new Error(`could not start ${name}`)
  let tail = ''
  const keep = (chunk: Buffer): void => { tail = (tail + chunk.toString('utf8')).slice(-8_192) }
  // Always drained, so a chatty child never blocks on a full pipe.
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let exited = false
  const exit = new Promise<void>(resolve => { child.once('exit', () => { exited = true; resolve() }) })
  const m: Managed = {
    name,
    child,
    pid: child.pid,
    output: () => tail,
    alive: () => !exited,
    stop: async () => {
      if (!exited) {
        child.kill('SIGTERM')
        await Promise.race([exit, sleep(STOP_GRACE_MS)])
      }
      if (!exited) {
        log(`${name} ignored SIGTERM for ${STOP_GRACE_MS} ms; SIGKILL`)
        child.kill('SIGKILL')
        await Promise.race([exit, sleep(STOP_GRACE_MS)])
      }
      managed.delete(m)
    }
  }
  managed.add(m)
  return m
}

// ---------------------------------------------------------------------------------------------
// The three paths

type PathId = 'direct-stdio' | 'direct-http' | 'gateway' | 'gateway-secured' | 'gateway-redis' | 'haproxy-1' | 'haproxy-3'
type GatewayVariant = 'plain' | 'secured' | 'redis'

interface Target {
  id: PathId
  label: string
  tool: string
  client: Client
  /** The server-everything process answering this path's calls. */
  upstreamPid: () => number | undefined
  gatewayPid?: number
  /** Several gateway replicas (behind HAProxy): CPU is summed over them, and over their upstreams. */
  replicaPids?: number[]
  upstreamPids?: () => number[]
  close: () => Promise<void>
}

const clientInfo = { name: 'switchboard-bench', version: '0.0.0' }

async function connectChecked (client: Client, transport: StdioClientTransport | StreamableHTTPClientTransport, tool: string, what: string): Promise<void> {
  await client.connect(transport, { timeout: START_TIMEOUT_MS })
  const { tools } = await client.listTools(undefined, { timeout: START_TIMEOUT_MS })
  if (!tools.some(t => t.name === tool)) throw new Error(`${what} does not list tool ${tool}`)
}

async function startDirectStdio (): Promise<Target> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], cwd: ROOT, stderr: 'ignore' })
  const client = new Client(clientInfo)
  const target: Target = {
    id: 'direct-stdio',
    label: 'a) direct stdio',
    tool: 'echo',
    client,
    upstreamPid: () => transport.pid ?? undefined,
    close: async () => {
      const pid = transport.pid ?? undefined
      await client.close().catch(() => {})
      if (pid !== undefined) strays.add(pid)
    }
  }
  targets.add(target)
  await connectChecked(client, transport, 'echo', 'server-everything (stdio)')
  return target
}

async function startDirectHttp (): Promise<Target> {
  // PORT=0: the kernel picks a free port; the shim pins the bind to 127.0.0.1.
  const server = startProcess('server-everything (streamableHttp)', ['--import', LOOPBACK_SHIM, EVERYTHING, 'streamableHttp'], { ...process.env, PORT: '0' })
  const client = new Client(clientInfo)
  const target: Target = {
    id: 'direct-http',
    label: 'b) direct HTTP',
    tool: 'echo',
    client,
    upstreamPid: () => server.pid,
    close: async () => {
      await client.close().catch(() => {})
      await server.stop()
    }
  }
  targets.add(target)
  try {
    const port = await loopbackPortOf(server.pid, server.name, server.alive)
    await connectChecked(client, new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)), 'echo', server.name)
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ${server.name} output ---\n${server.output()}`)
  }
  return target
}

// What a production deployment adds to every call: an API key checked, a deny-by-default policy, a
// rate limit that never refuses (but is counted), and the audit line written.
const BENCH_KEY = 'bench-key-0123456789abcdef'
const SECURED = [
  'auth:',
  `  apiKeys: [{ id: bench, key: ${BENCH_KEY}, roles: [bench] }]`,
  'policies:',
  '  default: deny',
  '  rules:',
  '    - { principals: ["*"], tools: ["*__delete_*"], effect: deny }',
  '    - { principals: ["role:bench"], tools: ["everything__*"], effect: allow }',
  'rateLimits:',
  '  rules:',
  '    - { principals: ["*"], tools: ["*"], key: principal+tool, limit: 1000000000, windowMs: 60000 }',
  'audit: { enabled: true }',
  ''
]

/** A redis-server of the bench's own on a free loopback port, for the sessions-in-Redis path; undefined when not installed. */
async function startRedis (): Promise<string | undefined> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined
  const probe = createServer()
  await new Promise<void>(resolve => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise(resolve => probe.close(resolve))
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  let exited = false
  const exit = new Promise<void>(resolve => { child.once('exit', () => { exited = true; resolve() }) })
  const m: Managed = {
    name: 'redis-server',
    child,
    pid: child.pid ?? -1,
    output: () => '',
    alive: () => !exited,
    stop: async () => {
      if (!exited) child.kill('SIGKILL')
      await Promise.race([exit, sleep(STOP_GRACE_MS)])
      managed.delete(m)
    }
  }
  managed.add(m)
  await waitFor('redis-server', START_TIMEOUT_MS, async () => await new Promise<true | undefined>((resolve) => {
    const socket = new Socket()
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(undefined) })
    socket.connect(port, '127.0.0.1')
  }))
  return `redis://127.0.0.1:${port}`
}

const VARIANT_LABELS: Record<GatewayVariant, { id: PathId, label: string, file: string }> = {
  plain: { id: 'gateway', label: 'c) gateway', file: 'switchboard-bench.yaml' },
  secured: { id: 'gateway-secured', label: 'd) gateway + auth, policy, limit, audit', file: 'switchboard-bench-secured.yaml' },
  redis: { id: 'gateway-redis', label: 'e) gateway, sessions in Redis', file: 'switchboard-bench-redis.yaml' }
}

/**
 * `count` gateway replicas (sessions in Redis) behind HAProxy round robin, the same config as path c)
 * otherwise: what scaling out costs and brings on this machine.
 */
async function startScaleOut (settings: Settings, tmpDir: string, count: 1 | 3, redisUrl: string): Promise<Target> {
  const replicas: Target[] = []
  for (let i = 0; i < count; i++) replicas.push(await startGateway(settings, tmpDir, 'redis', redisUrl, `switchboard-bench-replica-${count}-${i}.yaml`))
  const ports = await Promise.all(replicas.map(async r => await loopbackPortOf(r.gatewayPid ?? -1, 'replica', () => true)))
  const haproxy = await startHaproxy(tmpDir, `bench-${count}`, ports)
  const client = new Client(clientInfo)
  const target: Target = {
    id: count === 1 ? 'haproxy-1' : 'haproxy-3',
    label: `${count === 1 ? 'f' : 'g'}) HAProxy → ${count} replica${count === 1 ? '' : 's'}, sessions in Redis`,
    tool: 'everything__echo',
    client,
    upstreamPid: () => replicas[0]?.upstreamPid(),
    upstreamPids: () => replicas.flatMap(r => r.upstreamPid() ?? []),
    replicaPids: replicas.map(r => r.gatewayPid ?? -1),
    close: async () => {
      await client.close().catch(() => {})
      await haproxy.stop()
      for (const r of replicas) await r.close()
    }
  }
  targets.add(target)
  // The replicas' own clients are not used on this path.
  for (const r of replicas) await r.client.close().catch(() => {})
  await connectChecked(client, new StreamableHTTPClientTransport(new URL(`${haproxy.url}/mcp`)), 'everything__echo', `HAProxy → ${count}`)
  return target
}

async function startGateway (settings: Settings, tmpDir: string, variant: GatewayVariant = 'plain', redisUrl?: string, fileName?: string): Promise<Target> {
  const secured = variant === 'secured'
  const configFile = path.join(tmpDir, fileName ?? VARIANT_LABELS[variant].file)
  writeFileSync(configFile, [
    'listen: { host: 127.0.0.1, port: 0 }',
    // The secured path writes its audit line per call (info); the plain one logs only warnings.
    `logLevel: ${secured ? 'info' : 'warn'}`,
    'shutdown: { graceMs: 2000, killAfterMs: 1000 }',
    'upstreams:',
    '  - name: everything',
    '    transport: stdio',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: [${JSON.stringify(EVERYTHING)}, stdio]`,
    ...(secured ? SECURED : ['']),
    ...(variant === 'redis' ? [`redis: { url: ${JSON.stringify(redisUrl)} }`, 'sessions: { store: redis }', ''] : [])
  ].join('\n'))
  const nodeArgs = settings.cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`]
  // node --import tsx (not the tsx CLI, which would run the gateway in a grandchild): the pid we
  // sample is the gateway itself.
  const gw = startProcess('switchboard', [...nodeArgs, '--import', TSX_LOADER, GATEWAY_MAIN, '--config', configFile], { ...process.env })
  let upstream: number | undefined
  const upstreamPid = (): number | undefined => {
    if (upstream !== undefined && isAlive(upstream)) return upstream
    // Not just any child: tsx's esbuild service is a child of the gateway too.
    upstream = childrenOf(gw.pid).find(pid => cmdlineOf(pid).includes(EVERYTHING))
    if (upstream !== undefined) strays.add(upstream)
    return upstream
  }
  const client = new Client(clientInfo)
  const target: Target = {
    id: VARIANT_LABELS[variant].id,
    label: VARIANT_LABELS[variant].label,
    tool: 'everything__echo',
    client,
    upstreamPid,
    gatewayPid: gw.pid,
    close: async () => {
      await client.close().catch(() => {})
      upstreamPid()
      await gw.stop()
    }
  }
  targets.add(target)
  try {
    const port = await loopbackPortOf(gw.pid, 'switchboard', gw.alive)
    await waitFor('switchboard /readyz', START_TIMEOUT_MS, async () => {
      if (!gw.alive()) throw new Error('switchboard exited')
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined)
      await res?.body?.cancel()
      return res?.status === 200 ? true : undefined
    })
    if (upstreamPid() === undefined) throw new Error('switchboard is ready but has no upstream child process')
    const headers = secured ? { requestInit: { headers: { authorization: `Bearer ${BENCH_KEY}` } } } : undefined
    await connectChecked(client, new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), headers), 'everything__echo', 'switchboard')
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- switchboard output ---\n${gw.output()}`)
  }
  return target
}

// ---------------------------------------------------------------------------------------------
// Measuring

interface PhaseResult {
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

const failureSamples: string[] = []
function noteFailure (what: string): void {
  if (failureSamples.length < 10) failureSamples.push(what)
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

interface RepResult {
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

async function runRep (t: Target, settings: Settings, rep: number): Promise<RepResult> {
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

// ---------------------------------------------------------------------------------------------
// Reporting

interface PathSummary {
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

function summarize (t: Target, reps: RepResult[]): PathSummary {
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

const fmt = (x: number | undefined, digits: number): string => x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits)

function report (settings: Settings, summaries: PathSummary[], wallMs: number, load: { before: number[], after: number[] }): { text: string, ratios: Record<string, number>, targets: Record<string, unknown> } {
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
    for (const f of failureSamples) out.push(`  ${f}`)
  }
  return { text: out.join('\n'), ratios, targets }
}

// ---------------------------------------------------------------------------------------------
// Lifecycle: everything started is stopped, on success, error, signal or the time limit.

const targets = new Set<Target>()
let aborted: string | undefined
const isAborted = (): boolean => aborted !== undefined
let tmpDir: string | undefined
let cleaning: Promise<void> | undefined

async function cleanup (): Promise<void> {
  cleaning ??= (async () => {
    for (const t of [...targets]) {
      await Promise.race([t.close().catch((err: unknown) => { log(`closing ${t.id}: ${String(err)}`) }), sleep(3 * STOP_GRACE_MS)])
      targets.delete(t)
    }
    for (const m of [...managed]) await m.stop()
    await sleep(200)
    for (const pid of strays) {
      if (!isAlive(pid)) continue
      log(`process ${pid} outlived its parent; SIGKILL`)
      try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
    }
    if (tmpDir !== undefined) rmSync(tmpDir, { recursive: true, force: true })
  })()
  await cleaning
}

function abort (reason: string, code: number): void {
  if (aborted !== undefined) return
  aborted = reason
  log(`aborting: ${reason}`)
  // The cleanup itself is bounded too.
  setTimeout(() => { process.exit(code) }, 4 * STOP_GRACE_MS * (targets.size + 1)).unref()
  void cleanup().finally(() => process.exit(code))
}

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
  tmpDir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-bench-'))
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
      if (aborted !== undefined) return
      const r = await runRep(t, settings, rep)
      if (aborted !== undefined) return
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

  mkdirSync(path.dirname(RESULTS_FILE), { recursive: true })
  const json = {
    when: new Date().toISOString(),
    settings,
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, platform: `${os.platform()} ${os.release()}`, clockTicks: CLK_TCK, loadavgBefore: loadBefore, loadavgAfter: loadAfter },
    wallSeconds: round(wallMs / 1000, 1),
    summary: summaries,
    ratios,
    targets: verdicts,
    reps: Object.fromEntries(results),
    failureSamples,
    abortListenerWarnings
  }
  writeFileSync(RESULTS_FILE, JSON.stringify(json, (_k, v: unknown) => typeof v === 'number' ? round(v, 4) : v, 2) + '\n')
  log(`results written to ${path.relative(ROOT, RESULTS_FILE)}`)
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
