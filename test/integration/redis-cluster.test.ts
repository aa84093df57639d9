import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { RedisSessionStore } from '../../src/session/redis-session-store.ts'
import type { SessionMessage } from '../../src/session/session-store.ts'
import { startRedisCluster } from '../helpers/redis-cluster.ts'
import { redisOrSkip } from '../helpers/redis-server.ts'
import { readEvents } from '../helpers/sse-events.ts'
import { rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'
const ALICE = { authorization: `Bearer ${KEY}` }
const headersOf = (sessionId: string): Record<string, string> => ({ ...ALICE, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })

/** The one JSON-RPC answer of a POST (JSON, or the SSE message that carries a result or error). */
async function answer (res: Response): Promise<Record<string, unknown>> {
  const body = await res.text()
  assert.equal(res.status, 200, body)
  const json = body.trimStart().startsWith('{') ? body : body.split('\n').filter(l => l.startsWith('data: ')).map(l => l.slice(6)).find(l => /"(result|error)"/.test(l)) ?? '{}'
  return JSON.parse(json) as Record<string, unknown>
}

async function rpc (gw: RunningGateway, sessionId: string, id: number, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  return await answer(await rawPost(gw.url, { jsonrpc: '2.0', id, method, params }, headersOf(sessionId)))
}

/** Every key of every primary that matches `pattern`. */
async function clusterKeys (t: TestContext, ports: number[], pattern: string): Promise<string[]> {
  const keys: string[] = []
  for (const port of ports) {
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    t.after(() => { client.disconnect() })
    await client.connect()
    keys.push(...await client.keys(pattern))
    client.disconnect()
  }
  return keys
}

test('Redis Cluster (three primaries): two replicas share sessions, pages, calls, rate limits, pins and resumable streams with no CROSSSLOT and no store error', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const cluster = await startRedisCluster(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const prefix = `cl${Date.now()}`
  const config = JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    // What is tested is delivery across slots and replicas, not Redis timeouts: a loaded CI machine
    // must not fail a save at the 250 ms default (seen failing 3 runs in 15 so at load 9).
    redis: { cluster: cluster.seeds.slice(0, 1), keyPrefix: prefix, timeoutMs: 2000 },
    sessions: { store: 'redis' },
    catalog: { pageSize: 2 },
    rateLimits: { store: 'redis', keyPrefix: `${prefix}:rl`, rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit: 100_000, windowMs: 60_000 }] },
    pinning: { store: 'redis', keyPrefix: `${prefix}:pins` }
  })
  const a = await startGateway(t, config)
  const b = await startGateway(t, config)
  await waitReady(a)
  await waitReady(b)
  const ports = cluster.nodes.map(n => n.port)

  const sessions: string[] = []
  for (let i = 0; i < 6; i++) sessions.push((await rawInitialize((i % 2 === 0 ? a : b).url, '2025-11-25', ALICE)).sessionId)
  for (const [i, id] of sessions.entries()) {
    // Opened on one replica, paged and called through the other.
    const other = i % 2 === 0 ? b : a
    const first = await rpc(other, id, 2, 'tools/list', {}) as { result: { tools: unknown[], nextCursor?: string } }
    assert.equal(first.result.tools.length, 2)
    assert.ok(first.result.nextCursor !== undefined)
    const second = await rpc(i % 2 === 0 ? a : b, id, 3, 'tools/list', { cursor: first.result.nextCursor }) as { result: { tools: unknown[] } }
    assert.ok(second.result.tools.length > 0)
    const called = await rpc(other, id, 4, 'tools/call', { name: 'web__echo', arguments: { text: `s${i}` } }) as { result: { structuredContent: { text: string } } }
    assert.equal(called.result.structuredContent.text, `s${i}`)
  }

  // A call with progress on A, its stream resumed on B from Redis Streams (the append script).
  const id = sessions[0] as string
  const post = await rawPost(a.url, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 60, steps: 3 }, _meta: { progressToken: 'p' } } }, headersOf(id))
  const events = await readEvents(post, evs => evs.some(e => e.data.includes('"result"')))
  const firstId = events.find(e => e.id !== undefined)?.id
  assert.ok(firstId !== undefined, `the stream carries event ids: ${JSON.stringify(events)}`)
  const resumed = await fetch(b.url, { headers: { ...headersOf(id), accept: 'text/event-stream', 'last-event-id': firstId } })
  assert.equal(resumed.status, 200)
  const replay = await readEvents(resumed, evs => evs.some(e => e.data.includes('"result"')))
  assert.ok(replay.some(e => e.data.includes('"result"') && e.data.includes('"id":5')), `the result replayed on B: ${JSON.stringify(replay)}`)

  // The session's event keys share its hash tag, so they sit in one slot.
  const eventKeys = await clusterKeys(t, ports, `${prefix}:events:*`)
  assert.ok(eventKeys.some(k => k.startsWith(`${prefix}:events:{${id}}`)), eventKeys.join(' '))
  assert.ok((await clusterKeys(t, ports, `${prefix}:pins:*`)).length > 0, 'pins stored in the cluster')
  assert.ok((await clusterKeys(t, ports, `${prefix}:rl:*`)).length > 0, 'rate-limit counters stored in the cluster')
  for (const gw of [a, b]) {
    const metrics = await scrapeMetrics(gw.baseUrl)
    assert.deepEqual(metrics.split('\n').filter(l => /^switchboard_(session_store|rate_limit_store)_errors_total/.test(l) && !/ 0$/.test(l)), [], 'no Redis operation failed')
    assert.deepEqual(gw.logs.filter(l => JSON.stringify(l).includes('CROSSSLOT')), [])
  }
})

test('Redis Cluster: replicas talk over sharded channels; a message for one replica reaches it alone, a broadcast every other one', { timeout: 60_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const cluster = await startRedisCluster(t)
  const errors: string[] = []
  const stores = ['a', 'b', 'c'].map((replica) => {
    const store = new RedisSessionStore({ connection: { cluster: cluster.seeds }, keyPrefix: 'cbus', commandTimeoutMs: 500, ttlMs: 60_000, replica, onError: (op) => { errors.push(op) } })
    const received: SessionMessage[] = []
    store.onMessage((message) => { received.push(message) })
    t.after(() => store.close())
    return { store, received }
  })
  const [a, b, c] = stores as [typeof stores[number], typeof stores[number], typeof stores[number]]
  // Published until it arrives: the first may go out before the subscription does.
  await waitFor(() => {
    if (b.received.some(m => m.kind === 'cancel' && m.requestId === 'to b')) return true
    a.store.publish({ kind: 'cancel', sessionId: 's1', requestId: 'to b', reason: 'test' }, 'b')
    return false
  }, 'a cancel to reach b', 15_000)
  await waitFor(() => {
    if (b.received.some(m => m.kind === 'removed') && c.received.some(m => m.kind === 'removed')) return true
    a.store.publish({ kind: 'removed', sessionId: 's2' })
    return false
  }, 'a broadcast to reach b and c', 15_000)
  // Publishes before the cluster client was ready failed fast (no offline queue); from now on none may.
  errors.length = 0
  a.store.publish({ kind: 'cancel', sessionId: 's1', requestId: 'to b again', reason: 'test' }, 'b')
  a.store.publish({ kind: 'removed', sessionId: 's3' })
  await waitFor(() => c.received.some(m => m.kind === 'removed' && m.sessionId === 's3') && b.received.some(m => m.kind === 'cancel' && m.requestId === 'to b again'), 'the second message and broadcast')
  assert.deepEqual(c.received.filter(m => m.kind === 'cancel'), [], 'c does not hear what is meant for b')
  assert.equal(a.received.length, 0, 'a does not hear itself')
  // Sharded channels, each on the one node owning its slot; no classic channel anywhere.
  const shard: string[] = []
  const classic: string[] = []
  for (const node of cluster.nodes) {
    const client = new Redis({ host: '127.0.0.1', port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    t.after(() => { client.disconnect() })
    await client.connect()
    shard.push(...await client.call('PUBSUB', 'SHARDCHANNELS', 'cbus:*') as string[])
    classic.push(...await client.call('PUBSUB', 'CHANNELS', 'cbus:*') as string[])
    client.disconnect()
  }
  assert.deepEqual(shard.sort(), ['cbus:bus', 'cbus:bus:a', 'cbus:bus:b', 'cbus:bus:c'])
  assert.deepEqual(classic, [])
  assert.deepEqual(errors, [])
})
