// The paths measured, each started once per run: the upstream directly (stdio, HTTP), through the
// gateway (plain, secured, sessions in Redis), and through HAProxy to gateway replicas.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { waitFor } from './abort.ts'
import { ROOT, START_TIMEOUT_MS } from './common.ts'
import { startHaproxy } from './haproxy.ts'
import { trackTarget } from './lifecycle.ts'
import type { GatewayVariant, PathId, Target } from './target.ts'
import { childrenOf, cmdlineOf, isAlive, loopbackPortOf } from './proc.ts'
import { addStray, startProcess } from './processes.ts'
import type { Settings } from './settings.ts'

const EVERYTHING = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
const LOOPBACK_SHIM = path.join(ROOT, 'bench', 'loopback-listen.mjs')
const GATEWAY_MAIN = path.join(ROOT, 'src', 'main.ts')
const TSX_LOADER = import.meta.resolve('tsx')

const clientInfo = { name: 'switchboard-bench', version: '0.0.0' }

async function connectChecked (client: Client, transport: StdioClientTransport | StreamableHTTPClientTransport, tool: string, what: string): Promise<void> {
  await client.connect(transport, { timeout: START_TIMEOUT_MS })
  const { tools } = await client.listTools(undefined, { timeout: START_TIMEOUT_MS })
  if (!tools.some(t => t.name === tool)) throw new Error(`${what} does not list tool ${tool}`)
}

export async function startDirectStdio (): Promise<Target> {
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
      if (pid !== undefined) addStray(pid)
    }
  }
  trackTarget(target)
  await connectChecked(client, transport, 'echo', 'server-everything (stdio)')
  return target
}

export async function startDirectHttp (): Promise<Target> {
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
  trackTarget(target)
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

const VARIANT_LABELS: Record<GatewayVariant, { id: PathId, label: string, file: string }> = {
  plain: { id: 'gateway', label: 'c) gateway', file: 'switchboard-bench.yaml' },
  secured: { id: 'gateway-secured', label: 'd) gateway + auth, policy, limit, audit', file: 'switchboard-bench-secured.yaml' },
  redis: { id: 'gateway-redis', label: 'e) gateway, sessions in Redis', file: 'switchboard-bench-redis.yaml' }
}

/**
 * `count` gateway replicas (sessions in Redis) behind HAProxy round robin, the same config as path c)
 * otherwise: what scaling out costs and brings on this machine.
 */
export async function startScaleOut (settings: Settings, tmpDir: string, count: 1 | 3, redisUrl: string): Promise<Target> {
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
  trackTarget(target)
  // The replicas' own clients are not used on this path.
  for (const r of replicas) await r.client.close().catch(() => {})
  await connectChecked(client, new StreamableHTTPClientTransport(new URL(`${haproxy.url}/mcp`)), 'everything__echo', `HAProxy → ${count}`)
  return target
}

export async function startGateway (settings: Settings, tmpDir: string, variant: GatewayVariant = 'plain', redisUrl?: string, fileName?: string): Promise<Target> {
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
    if (upstream !== undefined) addStray(upstream)
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
  trackTarget(target)
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
