// The soak's cluster, all on loopback and started here with the test helpers: one redis-server
// (sessions, stream events, cross-replica messages), a Streamable HTTP upstream fixture, three
// gateway replicas (each with its own stdio upstream fixture) and HAProxy round robin in front.
// The helpers register their clean-up on a TestContext; the soak hands them its Teardown instead.
import { readFileSync } from 'node:fs'
import { descendants, parentOf } from '../../test/helpers/descendants.ts'
import { hasHaproxy, startHaproxy, type Haproxy } from '../../test/helpers/haproxy.ts'
import { hasRedisServer, startRedisServer, type RedisServer } from '../../test/helpers/redis-server.ts'
import { startReplicaAt, startReplicas, type Replica } from '../../test/helpers/replicas.ts'
import { fixtureCommand, startFixtureProcess, type FixtureProcess } from '../../test/helpers/spawn-fixture.ts'
import type { Teardown } from './teardown.ts'

export const API_KEY = 'soak-key-0123456789abcdef0123'
/** The gateway answers every call within this (the upstreams' timeoutMs), so the soak's own timeout above it means "no answer at all". */
export const UPSTREAM_TIMEOUT_MS = 10_000
const READY_WAIT_MS = 20_000

export interface Cluster {
  redis: RedisServer
  balancer: Haproxy
  replicas: Replica[]
  web: FixtureProcess
  webPort: number
  config: Record<string, unknown>
}

export async function startCluster (teardown: Teardown, replicaCount: number): Promise<Cluster> {
  if (!hasRedisServer()) throw new Error('redis-server is not installed (apt-get install redis-server)')
  if (!hasHaproxy()) throw new Error('haproxy is not installed (apt-get install haproxy; Debian puts it in /usr/sbin)')
  const t = teardown.context()
  const redis = await startRedisServer(t)
  const { web, webPort } = await startWeb(teardown)
  const stdio = fixtureCommand(['--name', 'local'])
  const config = {
    upstreams: [
      { name: 'local', transport: 'stdio', command: stdio.command, args: stdio.args, timeoutMs: UPSTREAM_TIMEOUT_MS },
      { name: 'web', transport: 'streamable-http', url: web.url, timeoutMs: UPSTREAM_TIMEOUT_MS }
    ],
    auth: { apiKeys: [{ id: 'soak', key: API_KEY }] },
    redis: { url: redis.url },
    sessions: { store: 'redis' },
    // Pages of 10: a tools/list walk takes several requests, each on any replica.
    catalog: { pageSize: 10 },
    // One audit line per call would be most of the replicas' output (kept in memory by the helper).
    audit: { enabled: false },
    // info: the helper waits for the "switchboard listening" line.
    logLevel: 'info'
  }
  const replicas = await startReplicas(t, replicaCount, config)
  const balancer = await startHaproxy(t, replicas.map(r => ({ name: r.name, port: r.port })))
  await waitUntil(async () => Object.values(await balancer.serverStates()).filter(s => s === 'UP').length === replicas.length, 'every replica UP in HAProxy')
  return { redis, balancer, replicas, web, webPort, config }
}

/** The Streamable HTTP upstream, again on the same port after a crash (the replicas know its URL). */
export async function startWeb (teardown: Teardown, port = 0): Promise<{ web: FixtureProcess, webPort: number }> {
  const web = await startFixtureProcess(['--transport', 'http', '--name', 'web', '--port', String(port)])
  teardown.after(async () => { await web.stop() })
  teardown.track(web.pid, true)
  return { web, webPort: Number(new URL(web.url).port) }
}

/** SIGKILL, then the same replica again on its port; resolves once HAProxy routes to it. */
export async function restartReplica (teardown: Teardown, cluster: Cluster, index: number): Promise<void> {
  const old = cluster.replicas[index] as Replica
  const children = childrenOf(old.pid)
  old.kill('SIGKILL')
  await old.exited
  // Its stdio upstream has its own process group: it should leave when its stdin closes; if not, it is killed at the end.
  for (const pid of children) teardown.track(pid, true)
  const again = await startReplicaAt(teardown.context(), old.name, old.port, cluster.config)
  cluster.replicas[index] = again
  await waitUntil(async () => (await cluster.balancer.serverStates())[again.name] === 'UP', `${again.name} UP in HAProxy`)
}

/** The stdio upstream of one replica, killed (the replica restarts it). */
export function crashStdioUpstream (cluster: Cluster, index: number): number | undefined {
  const replica = cluster.replicas[index] as Replica
  const child = childrenOf(replica.pid).find(pid => cmdline(pid).includes('controllable-server'))
  if (child === undefined) return undefined
  try { process.kill(-child, 'SIGKILL') } catch { try { process.kill(child, 'SIGKILL') } catch { return undefined } }
  return child
}

export async function crashWeb (teardown: Teardown, cluster: Cluster): Promise<void> {
  cluster.web.kill('SIGKILL')
  await cluster.web.exited
  const { web } = await startWeb(teardown, cluster.webPort)
  cluster.web = web
}

/** The direct children of a process (its stdio upstreams). */
function childrenOf (pid: number): number[] {
  return descendants(pid).map(p => p.pid).filter(child => parentOf(child) === pid)
}

function cmdline (pid: number): string {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ') } catch { return '' }
}

async function waitUntil (check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + READY_WAIT_MS
  while (!await check().catch(() => false)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}
