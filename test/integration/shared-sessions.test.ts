import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer, type ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { startRedisServer, redisOrSkip, type RedisServer } from '../helpers/redis-server.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef01' }

/** Two replicas on one Redis, in front of one shared Streamable HTTP upstream. */
async function replicas (t: TestContext, redis: RedisServer, upstream: ControllableServerHandle, count = 2): Promise<RunningGateway[]> {
  const config = JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEYS.alice }, { id: 'bob', key: KEYS.bob }] },
    redis: { url: redis.url, keyPrefix: `t${Date.now()}` },
    sessions: { store: 'redis' },
    catalog: { listChangedDebounceMs: 20 }
  })
  const all: RunningGateway[] = []
  for (let i = 0; i < count; i++) {
    const gw = await startGateway(t, config)
    await waitReady(gw)
    all.push(gw)
  }
  return all
}

/** A client whose every HTTP request goes to the next replica in turn, as a round-robin balancer without stickiness would send it. */
function roundRobin (gateways: RunningGateway[]): { fetch: typeof fetch, served: number[] } {
  const served = gateways.map(() => 0)
  let next = 0
  return {
    served,
    fetch: async (input, init) => {
      const i = next++ % gateways.length
      served[i] = (served[i] ?? 0) + 1
      const url = new URL(input instanceof Request ? input.url : String(input))
      const target = new URL(url.pathname + url.search, (gateways[i] as RunningGateway).baseUrl)
      return await fetch(target, init)
    }
  }
}

async function balancedClient (t: TestContext, gateways: RunningGateway[], key: string, capabilities: Record<string, unknown> = {}): Promise<{ client: Client, served: number[] }> {
  const rr = roundRobin(gateways)
  const client = new Client({ name: 'balanced', version: '1' }, { capabilities })
  await client.connect(new StreamableHTTPClientTransport(new URL((gateways[0] as RunningGateway).url), { fetch: rr.fetch, requestInit: { headers: { authorization: `Bearer ${key}` } } }))
  t.after(async () => { await client.close().catch(() => {}) })
  return { client, served: rr.served }
}

async function setup (t: TestContext): Promise<{ redis: RedisServer, upstream: ControllableServerHandle, gateways: RunningGateway[] } | undefined> {
  if (!redisOrSkip(t)) return undefined
  const redis = await startRedisServer(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  return { redis, upstream, gateways: await replicas(t, redis, upstream) }
}

test('any replica serves any request of a session: lists, calls, progress and pages through a round-robin client', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const { client, served } = await balancedClient(t, ready.gateways, KEYS.alice)
  const { tools } = await client.listTools()
  assert.ok(tools.some(tool => tool.name === 'web__echo'))
  for (let i = 0; i < 10; i++) {
    const result = await client.callTool({ name: 'web__echo', arguments: { text: `n${i}` } }) as ToolResult
    assert.equal(result.content[0]?.text, `n${i}`)
  }
  const progress: number[] = []
  await client.callTool({ name: 'web__slow', arguments: { ms: 30, steps: 3 } }, { onprogress: p => { progress.push(p.progress) } })
  assert.deepEqual(progress, [1, 2, 3])
  assert.ok(served.every(n => n >= 5), `every replica served requests: ${served.join(', ')}`)
  const adopted = ready.gateways.filter(gw => gw.logs.some(l => l.msg === 'session adopted from the shared store'))
  assert.equal(adopted.length, 1, 'the replica that did not open the session adopted it')
})

test('a sampling reply and a cancellation that land on another replica reach the one running the call', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const { client } = await balancedClient(t, ready.gateways, KEYS.alice, { sampling: {} })
  client.setRequestHandler('sampling/createMessage', (request) => {
    const first = request.params.messages[0]?.content
    const prompt = first !== undefined && !Array.isArray(first) && first.type === 'text' ? first.text : ''
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `echo ${prompt}` } }
  })
  // With two replicas in turn, the reply POST always goes to the replica the call's POST did not.
  const sampled = await client.callTool({ name: 'web__ask', arguments: { prompt: 'across' } }) as ToolResult
  assert.equal(sampled.content[0]?.text, 'sampled: echo across')

  const controller = new AbortController()
  const stalled = client.callTool({ name: 'web__stall', arguments: {} }, { signal: controller.signal })
  await waitFor(() => ready.gateways.some(gw => gw.gateway.sessions.inFlightCount() === 1), 'the stalled call to run')
  const before = ready.upstream.state.stats.cancelled
  controller.abort()
  await assert.rejects(stalled)
  await waitFor(() => ready.upstream.state.stats.cancelled > before, 'the upstream to be told the call was cancelled')
  await waitFor(() => ready.gateways.every(gw => gw.gateway.sessions.inFlightCount() === 0), 'no call left running')
  const published = (await Promise.all(ready.gateways.map(async gw => await scrapeMetrics(gw.baseUrl))))
  const count = (kind: string, outcome: string): number => published.reduce((n, text) => n + (metricValue(text, 'switchboard_cross_replica_messages_total', { kind, outcome }) ?? 0), 0)
  assert.equal(count('response', 'published'), 1)
  assert.equal(count('response', 'delivered'), 1)
  assert.ok(count('cancel', 'delivered') >= 1)
})

test('DELETE on one replica ends the session on every replica; another principal is refused on every replica', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const [a, b] = ready.gateways as [RunningGateway, RunningGateway]
  const alice = { authorization: `Bearer ${KEYS.alice}` }
  const { sessionId } = await rawInitialize(a.url, '2025-11-25', alice)
  const headers = { ...alice, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }
  assert.equal((await rawPost(b.url, list, headers)).status, 200, 'B serves a session A opened')
  for (const gw of [a, b]) {
    const res = await rawPost(gw.url, list, { ...headers, authorization: `Bearer ${KEYS.bob}` })
    assert.equal(res.status, 404, 'bob cannot use alice\'s session on any replica')
  }
  const deleted = await fetch(b.url, { method: 'DELETE', headers })
  assert.equal(deleted.status, 200)
  await waitFor(async () => (await rawPost(a.url, list, headers)).status === 404, 'A to forget the session deleted on B')
  assert.equal((await rawPost(b.url, list, headers)).status, 404)
})

test('a replica that opened a session can go away: the other one keeps serving it', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const [a, b] = ready.gateways as [RunningGateway, RunningGateway]
  const alice = { authorization: `Bearer ${KEYS.alice}` }
  const { sessionId } = await rawInitialize(a.url, '2025-11-25', alice)
  await a.close()
  const headers = { ...alice, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  const res = await rawPost(b.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'still here' } } }, headers)
  assert.equal(res.status, 200)
  assert.match(await res.text(), /still here/)
})
