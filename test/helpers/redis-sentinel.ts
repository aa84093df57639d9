import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { freePort } from './free-port.ts'
import { startRedisServer, type RedisServer } from './redis-server.ts'

// A Sentinel topology on loopback: a primary, a replica of it, and three sentinels that agree
// (quorum 2) the primary is down after DOWN_AFTER_MS and fail over to the replica.

export const SENTINEL_NAME = 'switchboard-test'
const DOWN_AFTER_MS = 500
const FAILOVER_TIMEOUT_MS = 2000
const START_TIMEOUT_MS = 10_000

export interface SentinelTopology {
  primary: RedisServer
  replica: RedisServer
  /** The sentinels' ports, as the `redis.sentinels` block wants them. */
  sentinels: Array<{ host: string, port: number }>
  /** The port of the server the sentinels call primary now. */
  primaryPort: () => Promise<number>
}

async function waitUntil (check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  while (!await check().catch(() => false)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

async function query<T> (port: number, run: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
    return await run(client)
  } finally {
    client.disconnect()
  }
}

async function startSentinel (t: TestContext, dir: string, index: number, primaryPort: number): Promise<number> {
  const port = await freePort()
  // Sentinel rewrites its config file (what it learns about replicas and peers): one each, writable.
  const file = join(dir, `sentinel-${index}.conf`)
  writeFileSync(file, [
    `port ${port}`,
    'bind 127.0.0.1',
    `dir ${dir}`,
    `sentinel monitor ${SENTINEL_NAME} 127.0.0.1 ${primaryPort} 2`,
    `sentinel down-after-milliseconds ${SENTINEL_NAME} ${DOWN_AFTER_MS}`,
    `sentinel failover-timeout ${SENTINEL_NAME} ${FAILOVER_TIMEOUT_MS}`,
    `sentinel parallel-syncs ${SENTINEL_NAME} 1`,
    ''
  ].join('\n'))
  const child: ChildProcess = spawn('redis-server', [file, '--sentinel'], { stdio: 'ignore' })
  t.after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exit = once(child, 'exit')
    child.kill('SIGKILL')
    await exit
  })
  await waitUntil(async () => await query(port, async c => await c.call('PING')) === 'PONG', `sentinel on ${port}`)
  return port
}

/** Primary, replica, three sentinels; everything killed and removed when the test ends. */
export async function startSentinelTopology (t: TestContext): Promise<SentinelTopology> {
  const primary = await startRedisServer(t)
  const replica = await startRedisServer(t, { args: ['--replicaof', '127.0.0.1', String(primary.port)] })
  await waitUntil(async () => /master_link_status:up/.test(await query(replica.port, async c => await c.info('replication'))), 'the replica to sync')
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-sentinel-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const ports: number[] = []
  for (let i = 0; i < 3; i++) ports.push(await startSentinel(t, dir, i, primary.port))
  const primaryPort = async (): Promise<number> => {
    const [, port] = await query(ports[0] as number, async c => await c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_NAME)) as [string, string]
    return Number(port)
  }
  // Ready when every sentinel knows the replica and its two peers, so a failover can be agreed.
  await waitUntil(async () => {
    for (const port of ports) {
      const info = await query(port, async c => await c.call('SENTINEL', 'MASTER', SENTINEL_NAME)) as string[]
      const field = (name: string): string | undefined => info[info.indexOf(name) + 1]
      if (field('num-slaves') !== '1' || field('num-other-sentinels') !== '2') return false
    }
    return true
  }, 'the sentinels to find the replica and each other')
  return { primary, replica, sentinels: ports.map(port => ({ host: '127.0.0.1', port })), primaryPort }
}
