// The paths measured, each started once per run: the upstream directly (stdio, HTTP), through the
// gateway (plain, secured, sessions in Redis; SDK and lean drivers), and through HAProxy to replicas.
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { ROOT } from './common.ts'
import { StreamableHTTPClientTransport, connectLean, connectSdk } from './drivers.ts'
import { EVERYTHING, LOOPBACK_SHIM, startGatewayProcess, type StartedGateway } from './gateway.ts'
import { startHaproxy } from './haproxy.ts'
import { onCleanup } from './lifecycle.ts'
import { loopbackPortOf } from './proc.ts'
import { addStray, startProcess } from './processes.ts'
import type { Settings } from './settings.ts'
import type { Driver, DriverKind, GatewayVariant, PathId, Target } from './target.ts'

/** Connections the lean driver may open: the highest in-flight level it is asked for. */
export function leanConnections (settings: Settings): number {
  return Math.max(16, ...settings.concurrency, ...settings.scaling)
}

export async function startDirectStdio (): Promise<Target> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [EVERYTHING, 'stdio'], cwd: ROOT, stderr: 'ignore' })
  onCleanup('direct stdio', async () => {
    const pid = transport.pid ?? undefined
    await transport.close().catch(() => {})
    if (pid !== undefined) addStray(pid)
  })
  const driver = await connectSdk(transport, 'echo', 'server-everything (stdio)')
  onCleanup('direct stdio client', driver.close)
  return { id: 'direct-stdio', label: 'a) direct stdio', role: 'direct', tool: 'echo', driver, upstreamPid: () => transport.pid ?? undefined }
}

export async function startDirectHttp (): Promise<Target> {
  // PORT=0: the kernel picks a free port; the shim pins the bind to 127.0.0.1.
  const server = startProcess('server-everything (streamableHttp)', ['--import', LOOPBACK_SHIM, EVERYTHING, 'streamableHttp'], { ...process.env, PORT: '0' })
  let driver: Driver
  try {
    const port = await loopbackPortOf(server.pid, server.name, server.alive)
    driver = await connectSdk(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)), 'echo', server.name)
  } catch (err) {
    throw new Error(`${(err as Error).message}\n--- ${server.name} output ---\n${server.output()}`)
  }
  onCleanup('direct HTTP client', driver.close)
  return { id: 'direct-http', label: 'b) direct HTTP', role: 'direct', tool: 'echo', driver, upstreamPid: () => server.pid }
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
  redis: { id: 'gateway-redis', label: 'e) gateway, sessions in Redis', file: 'switchboard-bench-redis.yaml' }
}

async function startVariant (settings: Settings, tmpDir: string, variant: GatewayVariant, redisUrl?: string, file?: string): Promise<StartedGateway> {
  const gw = await startGatewayProcess(settings, tmpDir, {
    file: file ?? VARIANTS[variant].file,
    // The secured path writes its audit line per call (info); the others log only warnings.
    logLevel: variant === 'secured' ? 'info' : 'warn',
    extra: variant === 'secured' ? SECURED : variant === 'redis' ? [`redis: { url: ${JSON.stringify(redisUrl)} }`, 'sessions: { store: redis }'] : undefined
  })
  onCleanup(`switchboard ${variant}`, gw.stop)
  return gw
}

/**
 * A gateway with one session per driver kind asked for: the SDK client (path c, d, e) and, for the
 * plain gateway, the lean driver (its scaling curve runs at the `scaling` in-flight levels).
 */
export async function startGateway (settings: Settings, tmpDir: string, variant: GatewayVariant, drivers: DriverKind[], redisUrl?: string): Promise<Target[]> {
  const gw = await startVariant(settings, tmpDir, variant, redisUrl)
  const headers = variant === 'secured' ? { authorization: `Bearer ${BENCH_KEY}` } : undefined
  const { id, label } = VARIANTS[variant]
  const base = { role: 'gateway' as const, tool: 'everything__echo', upstreamPid: gw.upstreamPid, proxyPids: () => [gw.pid], rssPids: [gw.pid], gatewayPid: gw.pid }
  const targets: Target[] = []
  for (const kind of drivers) {
    let driver: Driver
    try {
      driver = kind === 'sdk'
        ? await connectSdk(new StreamableHTTPClientTransport(gw.url, headers === undefined ? undefined : { requestInit: { headers } }), 'everything__echo', 'switchboard')
        : await connectLean(gw.url, 'everything__echo', 'switchboard', { connections: leanConnections(settings), timeoutMs: settings.callTimeoutMs, headers })
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- switchboard output ---\n${gw.process.output()}`)
    }
    onCleanup(`${id} ${kind} driver`, driver.close)
    targets.push(kind === 'sdk'
      ? { ...base, id, label, driver }
      : { ...base, id: `${id}-lean` as PathId, label, driver, concurrency: settings.scaling })
  }
  return targets
}

/**
 * `count` gateway replicas (sessions in Redis) behind HAProxy round robin, the same config as path c)
 * otherwise: what scaling out costs and brings on this machine.
 */
export async function startScaleOut (settings: Settings, tmpDir: string, count: 1 | 3, redisUrl: string): Promise<Target> {
  const replicas: StartedGateway[] = []
  for (let i = 0; i < count; i++) replicas.push(await startVariant(settings, tmpDir, 'redis', redisUrl, `switchboard-bench-replica-${count}-${i}.yaml`))
  const haproxy = await startHaproxy(tmpDir, `bench-${count}`, replicas.map(r => r.port))
  onCleanup(`haproxy ${count}`, haproxy.stop)
  const driver = await connectSdk(new StreamableHTTPClientTransport(new URL(`${haproxy.url}/mcp`)), 'everything__echo', `HAProxy → ${count}`)
  onCleanup(`haproxy ${count} driver`, driver.close)
  const pids = replicas.map(r => r.pid)
  return {
    id: count === 1 ? 'haproxy-1' : 'haproxy-3',
    label: `${count === 1 ? 'f' : 'g'}) HAProxy → ${count} replica${count === 1 ? '' : 's'}, sessions in Redis`,
    role: 'gateway',
    tool: 'everything__echo',
    driver,
    upstreamPid: () => replicas[0]?.upstreamPid(),
    upstreamPids: () => replicas.flatMap(r => r.upstreamPid() ?? []),
    proxyPids: () => pids,
    rssPids: pids
  }
}
