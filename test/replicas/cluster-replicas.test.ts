import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer, type ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { startRedisCluster } from '../helpers/redis-cluster.ts'
import { redisOrSkip } from '../helpers/redis-server.ts'
import { answerAsHost, repliesAndCancelAcross } from '../helpers/cross-replica.ts'
import { startGateway, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// shared-sessions.test.ts's cross-replica cases, on a three-primary Redis Cluster: the replicas'
// messages travel over sharded channels, the session's keys over several slots.

const KEY = 'alice-key-0123456789abcdef'

async function setup (t: TestContext): Promise<{ upstream: ControllableServerHandle, gateways: RunningGateway[] } | undefined> {
  if (!redisOrSkip(t)) return undefined
  const cluster = await startRedisCluster(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const prefix = `cr${Date.now()}`
  const config = JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    // What is tested is delivery across slots and replicas, not Redis timeouts: a loaded CI machine
    // must not fail a save at the 250 ms default (seen failing 3 runs in 15 so at load 9).
    redis: { cluster: cluster.seeds, keyPrefix: prefix, timeoutMs: 2000 },
    sessions: { store: 'redis' },
    rateLimits: { store: 'redis', keyPrefix: `${prefix}:rl`, rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit: 100_000, windowMs: 60_000 }] },
    catalog: { listChangedDebounceMs: 20 }
  })
  const gateways: RunningGateway[] = []
  for (let i = 0; i < 2; i++) {
    const gw = await startGateway(t, config)
    await waitReady(gw)
    gateways.push(gw)
  }
  return { upstream, gateways }
}

/** An SDK client whose every HTTP request goes to the next replica in turn (round robin, no stickiness). */
async function balancedClient (t: TestContext, gateways: RunningGateway[], capabilities: Record<string, unknown> = {}): Promise<Client> {
  let next = 0
  const rr: typeof fetch = async (input, init) => {
    const gw = gateways[next++ % gateways.length] as RunningGateway
    const url = new URL(input instanceof Request ? input.url : String(input))
    return await fetch(new URL(url.pathname + url.search, gw.baseUrl), init)
  }
  const client = new Client({ name: 'balanced', version: '1' }, { capabilities })
  await client.connect(new StreamableHTTPClientTransport(new URL((gateways[0] as RunningGateway).url), { fetch: rr, requestInit: { headers: { authorization: `Bearer ${KEY}` } } }))
  t.after(async () => { await client.close().catch(() => {}) })
  return client
}

test('cluster: sampling, elicitation and roots replies and a cancellation that land on another replica reach the one running the call', { timeout: 90_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const client = await balancedClient(t, ready.gateways, { sampling: {}, elicitation: { form: {} }, roots: {} })
  answerAsHost(client)
  const { tools } = await client.listTools()
  assert.ok(tools.some(tool => tool.name === 'web__echo'))
  const progress: number[] = []
  await client.callTool({ name: 'web__slow', arguments: { ms: 30, steps: 3 } }, { onprogress: p => { progress.push(p.progress) } })
  assert.deepEqual(progress, [1, 2, 3])
  // With two replicas in turn, the reply POST always goes to the replica the call's POST did not.
  const published = await repliesAndCancelAcross(client, ready)
  for (const text of published) {
    assert.deepEqual(text.split('\n').filter(l => /^switchboard_(session_store|rate_limit_store)_errors_total/.test(l) && !/ 0$/.test(l)), [], 'no Redis operation failed')
  }
  for (const gw of ready.gateways) assert.deepEqual(gw.logs.filter(l => JSON.stringify(l).includes('CROSSSLOT')), [])
})
