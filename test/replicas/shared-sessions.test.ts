import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { resourceUris, startControllableHttpServer, type ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { startRedisServer, redisOrSkip, type RedisServer } from '../helpers/redis-server.ts'
import { readEvents } from '../helpers/sse-events.ts'
import { answerAsHost, repliesAndCancelAcross } from '../helpers/cross-replica.ts'
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

/** A session of alice opened on `gw` with raw HTTP, and the headers of every later request of it. */
async function openOn (gw: RunningGateway): Promise<{ alice: Record<string, string>, headers: Record<string, string> }> {
  const alice = { authorization: `Bearer ${KEYS.alice}` }
  const { sessionId } = await rawInitialize(gw.url, '2025-11-25', alice)
  return { alice, headers: { ...alice, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' } }
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

test('sampling, elicitation and roots replies and a cancellation that land on another replica reach the one running the call', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const { client } = await balancedClient(t, ready.gateways, KEYS.alice, { sampling: {}, elicitation: { form: {} }, roots: {} })
  answerAsHost(client)
  // With two replicas in turn, the reply POST always goes to the replica the call's POST did not.
  await repliesAndCancelAcross(client, ready)
})

test('DELETE on one replica ends the session on every replica; another principal is refused on every replica', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const [a, b] = ready.gateways as [RunningGateway, RunningGateway]
  const { headers } = await openOn(a)
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

test('Redis down: a session known to a replica keeps working there, an unknown one is 503 (it may exist), failures are counted; back up, what it lost is written back', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const [a, b] = ready.gateways as [RunningGateway, RunningGateway]
  const { alice, headers } = await openOn(a)
  const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'x' } } }
  await ready.redis.kill()
  assert.equal((await rawPost(a.url, call, headers)).status, 200, 'A knows the session and keeps serving it')
  assert.equal((await rawPost(b.url, call, headers)).status, 503, 'B cannot look it up while Redis is down, and does not call it unknown')
  await waitFor(async () => (metricValue(await scrapeMetrics(b.baseUrl), 'switchboard_session_store_errors_total', { op: 'load' }) ?? 0) >= 1, 'the failed load to be counted')
  assert.ok(b.logs.some(l => l.msg.startsWith('session store unavailable')))
  const opened = await rawInitialize(a.url, '2025-11-25', alice)
  const openedMeanwhile = { ...alice, 'mcp-session-id': opened.sessionId, 'mcp-protocol-version': '2025-11-25' }
  assert.equal((await rawPost(a.url, call, openedMeanwhile)).status, 200, 'a session opens on A while Redis is down')
  await ready.redis.restart()
  // Redis restarted empty: A writes back what it holds, so B serves both the session it had lost
  // and the one opened while Redis was away; a session opened now is shared as usual.
  await waitFor(async () => (await rawPost(b.url, call, openedMeanwhile)).status === 200, 'the session opened meanwhile to reach B', 15_000)
  assert.equal((await rawPost(b.url, call, headers)).status, 200, 'the session Redis lost is back')
  const fresh = await rawInitialize(a.url, '2025-11-25', alice)
  assert.equal((await rawPost(b.url, call, { ...alice, 'mcp-session-id': fresh.sessionId, 'mcp-protocol-version': '2025-11-25' })).status, 200)
})

test('isolation: session across replicas: each replica that serves the session opens its own upstream connection for it', { timeout: 60_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t)
  const upstream = await startControllableHttpServer({ name: 'iso' })
  t.after(() => upstream.close())
  const config = JSON.stringify({
    upstreams: [{ name: 'iso', transport: 'streamable-http', url: upstream.url, isolation: 'session' }],
    redis: { url: redis.url, keyPrefix: `t${Date.now()}` },
    sessions: { store: 'redis' }
  })
  const gateways = [await startGateway(t, config), await startGateway(t, config)]
  for (const gw of gateways) await waitReady(gw)
  const { client } = await balancedClient(t, gateways, 'unused')
  const counts: string[] = []
  for (let i = 0; i < 4; i++) counts.push(((await client.callTool({ name: 'iso__counter', arguments: {} })) as ToolResult).content[0]?.text ?? '')
  // The calls are spread over both replicas, and each replica's own connection counts only its own calls.
  assert.ok(Math.max(...counts.map(Number)) < 4, `one upstream connection would have counted to 4: ${counts.join(', ')}`)
  for (const gw of gateways) assert.equal(gw.gateway.pool.status()[0]?.sessionConnections, 1)
})

test('a GET stream of a replica that went away resumes on another replica with Last-Event-ID, replaying what was missed', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const [a, b] = ready.gateways as [RunningGateway, RunningGateway]
  const { headers } = await openOn(a)
  const stream = await fetch(a.url, { headers: { ...headers, accept: 'text/event-stream' } })
  assert.equal(stream.status, 200)
  const reading = readEvents(stream, events => events.some(e => e.data.includes('list_changed')))
  await waitFor(() => [...a.gateway.sessions.all()].some(s => s.hasStream), 'A to hold the GET stream')
  const added = await rawPost(b.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'web__add_tool', arguments: { name: 'late' } } }, headers)
  assert.equal(added.status, 200)
  const seen = await reading
  const priming = seen[0]
  assert.ok(priming?.id !== undefined && priming.data === '', `a priming event first: ${JSON.stringify(seen)}`)
  assert.ok(seen.some(e => e.data.includes('notifications/tools/list_changed')), 'A sent the change on its stream')
  await a.close()
  const resumed = await fetch(b.url, { headers: { ...headers, accept: 'text/event-stream', 'last-event-id': priming.id } })
  assert.equal(resumed.status, 200)
  const changes = (events: Array<{ data: string }>): number => events.filter(e => e.data.includes('notifications/tools/list_changed')).length
  const replaying = readEvents(resumed, events => changes(events) >= 2)
  // The replayed stream carried no answer: it goes on at B as the session's stream.
  await waitFor(() => [...b.gateway.sessions.all()].some(s => s.hasStream), 'B to carry the stream on')
  await rawPost(b.url, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'web__add_tool', arguments: { name: 'later' } } }, headers)
  const replayed = await replaying
  assert.equal(changes(replayed), 2, `B replayed what followed the priming event, then carried the stream on: ${JSON.stringify(replayed)}`)
})

test('a subscription made on one replica brings resource updates to the GET stream held by another, once', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const [a, b] = ready.gateways as [RunningGateway, RunningGateway]
  const { headers } = await openOn(a)
  const uri = resourceUris({ name: 'web', sharedUris: false }).hello
  const stream = await fetch(b.url, { headers: { ...headers, accept: 'text/event-stream' } })
  assert.equal(stream.status, 200)
  const reading = readEvents(stream, events => events.filter(e => e.data.includes('resources/updated')).length >= 2)
  await waitFor(() => [...b.gateway.sessions.all()].some(s => s.hasStream), 'B to hold the GET stream')
  const subscribed = await rawPost(a.url, { jsonrpc: '2.0', id: 2, method: 'resources/subscribe', params: { uri } }, headers)
  assert.equal(subscribed.status, 200)
  await waitFor(() => b.gateway.pool.get('web') !== undefined && ready.upstream.state.stats.subscribes >= 2, 'both replicas to subscribe upstream')
  for (const id of [3, 4]) {
    const touched = await rawPost(a.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__touch', arguments: { uri } } }, headers)
    assert.equal(touched.status, 200)
  }
  const updates = (await reading).filter(e => e.data.includes('resources/updated'))
  assert.equal(updates.length, 2, 'each update once, on the stream B holds')
  assert.ok(updates.every(e => e.data.includes(uri)))
  const relayed = async (gw: RunningGateway): Promise<number> => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_notifications_relayed_total', { method: 'notifications/resources/updated' }) ?? 0
  assert.deepEqual([await relayed(a), await relayed(b)], [0, 2], 'A, which holds no stream of the session, sent none')
})

test('a log an upstream sends outside any call reaches the GET stream on another replica, once even when both replicas hear it', { timeout: 60_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const [a, b] = ready.gateways as [RunningGateway, RunningGateway]
  const { headers } = await openOn(a)
  const stream = await fetch(b.url, { headers: { ...headers, accept: 'text/event-stream' } })
  assert.equal(stream.status, 200)
  const logs = (events: Array<{ data: string }>): string[] => events.filter(e => e.data.includes('notifications/message')).map(e => String((JSON.parse(e.data) as { params: { data: unknown } }).params.data))
  const reading = readEvents(stream, events => logs(events).includes('last'))
  await waitFor(() => [...b.gateway.sessions.all()].some(s => s.hasStream), 'B to hold the GET stream')
  const later = (id: number, text: string, delayMs: number): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__log_later', arguments: { text, delayMs } } })
  // Only A's upstream connection sends this one; both connections send the same 'both'.
  assert.equal((await rawPost(a.url, later(2, 'from A only', 100), headers)).status, 200)
  assert.equal((await rawPost(a.url, later(3, 'both', 300), headers)).status, 200)
  assert.equal((await rawPost(b.url, later(4, 'both', 300), headers)).status, 200)
  assert.equal((await rawPost(b.url, later(5, 'last', 900), headers)).status, 200)
  assert.deepEqual(logs(await reading), ['from A only', 'both', 'last'])
  const count = async (gw: RunningGateway, outcome: string): Promise<number> => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_cross_replica_messages_total', { kind: 'log', outcome }) ?? 0
  assert.equal(await count(a, 'published'), 2, "A published what its connection heard: 'from A only' and 'both'")
  assert.ok(await count(b, 'delivered') >= 1, 'B handed on what A heard')
})
