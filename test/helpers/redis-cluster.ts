import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { TestContext } from 'node:test'
import { Redis } from 'ioredis'
import { freePort } from './free-port.ts'
import { startRedisServer, type RedisServer } from './redis-server.ts'

// A three-primary Redis Cluster on loopback (no replicas), made by `redis-cli --cluster create`.

const run = promisify(execFile)
const READY_TIMEOUT_MS = 15_000

export interface RedisClusterTopology {
  nodes: RedisServer[]
  /** As the `redis.cluster` block wants them. */
  seeds: Array<{ host: string, port: number }>
}

async function clusterState (port: number): Promise<string> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
    return await client.call('CLUSTER', 'INFO') as string
  } finally {
    client.disconnect()
  }
}

export async function startRedisCluster (t: TestContext, primaries = 3): Promise<RedisClusterTopology> {
  const nodes: RedisServer[] = []
  for (let i = 0; i < primaries; i++) {
    // The bus port would default to port + 10000, which may be taken or past 65535: one of its own.
    const busPort = await freePort()
    nodes.push(await startRedisServer(t, { args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort), '--cluster-node-timeout', '2000'] }))
  }
  await run('redis-cli', ['--cluster', 'create', ...nodes.map(n => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: READY_TIMEOUT_MS })
  const deadline = Date.now() + READY_TIMEOUT_MS
  for (const node of nodes) {
    while (!/cluster_state:ok/.test(await clusterState(node.port).catch(() => ''))) {
      if (Date.now() > deadline) throw new Error(`cluster not ok on ${node.port}`)
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }
  return { nodes, seeds: nodes.map(n => ({ host: '127.0.0.1', port: n.port })) }
}
