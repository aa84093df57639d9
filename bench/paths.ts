// The paths measured, each started once per run: the upstream directly (stdio, HTTP), through the
// gateway (plain, secured, sessions in Redis, to a Streamable HTTP upstream), through the HTTP floor
// (path h's yardstick), and through HAProxy to replicas; each with the drivers the selection asks
// for (SDK client, lean driver).
import path from 'node:path'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { ROOT } from './common.ts'
import { StreamableHTTPClientTransport, connectHttpDriver, connectLeanStdio, connectSdk, type HttpDriverOptions } from './drivers.ts'
import { EVERYTHING, LOOPBACK_SHIM, startGatewayProcess, type StartedGateway, type UpstreamSpec } from './gateway.ts'
import { balanceOf, startHaproxy } from './haproxy.ts'
import { onCleanup } from './lifecycle.ts'
import { loopbackPortOf } from './proc.ts'
import { addStray, startProcess, type Managed } from './processes.ts'
import type { Settings } from './settings.ts'
import { withDriver, type Driver, type DriverKind, type GatewayVariant, type PathId, type Target } from './target.ts'

/** Connections the lean driver may open: the highest in-flight level it is asked for. */
export function leanConnections (settings: Settings): number {
  return Math.max(16, ...settings.concurrency, ...settings.scaling)
}

export function httpDriverOptions (settings: Settings, extra?: Partial<HttpDriverOptions>): HttpDriverOptions {
  return { connections: leanConnections(settings), timeoutMs: settings.callTimeoutMs, ...extra }
}

/** Path a: server-everything over stdio, spawned by each driver for itself (SDK transport, lean stdio client). */
export async function startDirectStdio (settings: Settings, drivers: DriverKind[]): Promise<Target[]> {
  const base = { label: 'a) direct stdio', role: 'direct' as const, tool: 'echo' }
  const targets: Target[] = []
  for (const kind of drivers) {
    if (kind === 'lean') {
      const { driver, pid } = await connectLeanStdio(process.execPath, [EVERYTHING, 'stdio'], 'echo', 'server-everything (stdio)', { cwd: ROOT, timeoutMs: settings.callTimeoutMs })
      if (pid !== undefined) addStray(pid)
      onCleanup('direct stdio lean driver', driver.close)
      targets.push({ ...base, id: 'direct-stdio-lean', driver, upstreamPid: () => pid })
      continue
    }
    const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], cwd: ROOT, stderr: 'ignore' })
    onCleanup('direct stdio', async () => {
      const pid = transport.pid ?? undefined
      await transport.close().catch(() => {})
      if (pid !== undefined) addStray(pid)
    })
    const driver = await connectSdk(transport, 'echo', 'server-everything (stdio)')
    onCleanup('direct stdio client', driver.close)
    targets.push({ ...base, id: 'direct-stdio', driver, upstreamPid: () => transport.pid ?? undefined })
  }
  return targets
}

/** server-everything's Streamable HTTP mode as a process of its own, on a loopback port the kernel picks. */
async function startEverythingHttp (name: string): Promise<{ server: Managed, url: URL }> {
  // PORT=0: the kernel picks a free port; the shim pins the bind to 127.0.0.1.
  const server = startProcess(name, ['--import', LOOPBACK_SHIM, EVERYTHING, 'streamableHttp'], { ...process.env, PORT: '0' })
  try {
    const port = await loopbackPortOf(server.pid, server.name, server.alive)
    return { server, url: new URL(`http://127.0.0.1:${port}/mcp`) }
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ${server.name} output ---\n${server.output()}`)
  }
}

/** Connects each driver kind to url; a failure carries the output of the process behind it. */
async function connectEach (drivers: DriverKind[], url: URL, tool: string, what: string, options: HttpDriverOptions, output: () => string): Promise<Array<{ kind: DriverKind, driver: Driver }>> {
  const out: Array<{ kind: DriverKind, driver: Driver }> = []
  for (const kind of drivers) {
    let driver: Driver
    try {
      driver = await connectHttpDriver(kind, url, tool, what, options)
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- ${what} output ---\n${output()}`)
    }
    onCleanup(`${what} ${kind} driver`, driver.close)
    out.push({ kind, driver })
  }
  return out
}

/** Path b: server-everything over Streamable HTTP, one process, a session per driver. */
export async function startDirectHttp (settings: Settings, drivers: DriverKind[]): Promise<Target[]> {
  const { server, url } = await startEverythingHttp('server-everything (streamableHttp)')
  const connected = await connectEach(drivers, url, 'echo', server.name, httpDriverOptions(settings), server.output)
  return connected.map(({ kind, driver }) => ({ id: withDriver('direct-http', kind), label: 'b) direct HTTP', role: 'direct', tool: 'echo', driver, upstreamPid: () => server.pid }))
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

const VARIANTS: Record<GatewayVariant, { id: PathId, label: string, file: string }> = {
  plain: { id: 'gateway', label: 'c) gateway', file: 'switchboard-bench.yaml' },
  secured: { id: 'gateway-secured', label: 'd) gateway + auth, policy, limit, audit', file: 'switchboard-bench-secured.yaml' },
  redis: { id: 'gateway-redis', label: 'e) gateway, sessions in Redis', file: 'switchboard-bench-redis.yaml' },
  http: { id: 'gateway-http', label: 'h) gateway → Streamable HTTP upstream', file: 'switchboard-bench-http.yaml' }
}

/** Where the redis variant keeps its sessions: one Redis by URL, or a cluster by its seed nodes. */
export type RedisTarget = ({ url: string } | { cluster: Array<{ host: string, port: number }> }) & { pids: number[] }

interface VariantOptions { redisUrl?: string, redisCluster?: Array<{ host: string, port: number }>, upstreams?: UpstreamSpec[], file?: string }

function redisBlock (options: VariantOptions): string {
  if (options.redisCluster !== undefined) return `redis: { cluster: [${options.redisCluster.map(n => `{ host: ${JSON.stringify(n.host)}, port: ${n.port} }`).join(', ')}] }`
  return `redis: { url: ${JSON.stringify(options.redisUrl)} }`
}

async function startVariant (settings: Settings, tmpDir: string, variant: GatewayVariant, options: VariantOptions = {}): Promise<StartedGateway> {
  const gw = await startGatewayProcess(settings, tmpDir, {
    file: options.file ?? VARIANTS[variant].file,
    // The secured path writes its audit line per call (info); the others log only warnings.
    logLevel: variant === 'secured' ? 'info' : 'warn',
    upstreams: options.upstreams,
    extra: variant === 'secured' ? SECURED : variant === 'redis' ? [redisBlock(options), 'sessions: { store: redis }'] : undefined
  })
  onCleanup(`switchboard ${variant}`, gw.stop)
  return gw
}

/**
 * A gateway with one session per driver kind asked for; the lean driver on the plain gateway (path
 * c) also runs the scaling curve's in-flight levels.
 */
export async function startGateway (settings: Settings, tmpDir: string, variant: GatewayVariant, drivers: DriverKind[], options: VariantOptions = {}): Promise<Target[]> {
  const gw = await startVariant(settings, tmpDir, variant, options)
  const headers = variant === 'secured' ? { authorization: `Bearer ${BENCH_KEY}` } : undefined
  const { id, label } = VARIANTS[variant]
  const base = { label, role: 'gateway' as const, tool: 'everything__echo', upstreamPid: gw.upstreamPid, proxyPids: () => [gw.pid], rssPids: [gw.pid], gatewayPid: gw.pid }
  const connected = await connectEach(drivers, gw.url, 'everything__echo', 'switchboard', httpDriverOptions(settings, { headers }), gw.process.output)
  return connected.map(({ kind, driver }) => ({
    ...base,
    id: withDriver(id, kind),
    driver,
    ...(kind === 'lean' && variant === 'plain' ? { concurrency: settings.scaling } : {})
  }))
}

/** Path h: the gateway with one Streamable HTTP upstream, server-everything's streamableHttp process. */
export async function startGatewayHttpUpstream (settings: Settings, tmpDir: string, drivers: DriverKind[]): Promise<Target[]> {
  const { server, url } = await startEverythingHttp('server-everything (streamableHttp, upstream of h)')
  return await startGateway(settings, tmpDir, 'http', drivers, { upstreams: [{ name: 'everything', url: url.href, pid: server.pid }] })
}

const FLOOR_HTTP = path.join(ROOT, 'bench', 'floor-http-proxy.mjs')

/**
 * The floor of path h (`hfloor`): bench/floor-http-proxy.mjs in front of a server-everything
 * `streamableHttp` process of its own, as path h's gateway is; the lean driver only (the SDK client's
 * own cost would hide the floor), its session opened through the proxy like any other.
 */
export async function startHttpFloor (settings: Settings): Promise<Target[]> {
  const { server, url } = await startEverythingHttp('server-everything (streamableHttp, upstream of the HTTP floor)')
  const proxy = startProcess('floor-http-proxy', [FLOOR_HTTP, url.href], { ...process.env })
  onCleanup('floor-http-proxy', proxy.stop)
  let port: number
  try {
    port = await loopbackPortOf(proxy.pid, proxy.name, proxy.alive)
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ${proxy.name} output ---\n${proxy.output()}`)
  }
  const connected = await connectEach(['lean'], new URL(`http://127.0.0.1:${port}/mcp`), 'echo', proxy.name, httpDriverOptions(settings), proxy.output)
  return connected.map(({ kind, driver }) => ({
    id: withDriver('floor-http', kind),
    label: 'floor: bare node:http → Streamable HTTP (bench/floor-http-proxy.mjs)',
    role: 'floor',
    tool: 'echo',
    driver,
    upstreamPid: () => server.pid,
    proxyPids: () => [proxy.pid],
    rssPids: [proxy.pid]
  }))
}

/**
 * `count` gateway replicas (sessions in Redis) behind HAProxy (a hash of Mcp-Session-Id as in deploy/haproxy.cfg, or BENCH_HAPROXY_BALANCE), the same config as path c)
 * otherwise: what scaling out costs and brings on this machine. With a cluster (path i), the same
 * three replicas keep their sessions in a three-primary Redis Cluster instead of one Redis.
 */
export async function startScaleOut (settings: Settings, tmpDir: string, count: 1 | 3, redis: RedisTarget): Promise<Target> {
  const cluster = 'cluster' in redis
  const name = cluster ? `cluster-${count}` : String(count)
  const options = cluster ? { redisCluster: redis.cluster } : { redisUrl: redis.url }
  const replicas: StartedGateway[] = []
  for (let i = 0; i < count; i++) replicas.push(await startVariant(settings, tmpDir, 'redis', { ...options, file: `switchboard-bench-replica-${name}-${i}.yaml` }))
  const balance = balanceOf()
  const haproxy = await startHaproxy(tmpDir, `bench-${name}`, replicas.map(r => r.port), balance)
  onCleanup(`haproxy ${name}`, haproxy.stop)
  const driver = await connectSdk(new StreamableHTTPClientTransport(new URL(`${haproxy.url}/mcp`)), 'everything__echo', `HAProxy → ${name}`)
  onCleanup(`haproxy ${name} driver`, driver.close)
  const pids = replicas.map(r => r.pid)
  const plural = count === 1 ? '' : 's'
  const sticky = balance === 'roundrobin' ? ', round robin per request' : ''
  return {
    id: cluster ? 'haproxy-3-cluster' : count === 1 ? 'haproxy-1' : 'haproxy-3',
    label: cluster
      ? `i) HAProxy → ${count} replica${plural}, sessions in a ${redis.cluster.length}-primary Redis Cluster${sticky}`
      : `${count === 1 ? 'f' : 'g'}) HAProxy → ${count} replica${plural}, sessions in Redis${sticky}`,
    role: 'gateway',
    tool: 'everything__echo',
    driver,
    upstreamPid: () => replicas[0]?.upstreamPid(),
    upstreamPids: () => replicas.flatMap(r => r.upstreamPid() ?? []),
    proxyPids: () => pids,
    redisPids: () => redis.pids,
    rssPids: pids
  }
}
