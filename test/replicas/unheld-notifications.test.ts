import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { haproxyOrSkip, SERVED_BY_HEADER, startHaproxy } from '../helpers/haproxy.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { startReplicas, type Replica } from '../helpers/replicas.ts'
import { readEvents } from '../helpers/sse-events.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, waitFor } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'
const CHANGE = 'notifications/tools/list_changed'

/** The sum over `replicas` of switchboard_unheld_stream_events_total{outcome}. */
async function unheld (replicas: Replica[], outcome: string): Promise<number> {
  let n = 0
  for (const r of replicas) n += metricValue(await scrapeMetrics(r.baseUrl), 'switchboard_unheld_stream_events_total', { outcome }) ?? 0
  return n
}

test('through HAProxy: a tool added while no replica carries the session\'s GET stream (its replica SIGKILLed) is stored once in that stream, and a resume with Last-Event-ID elsewhere replays exactly one tools/list_changed', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t) || !haproxyOrSkip(t)) return
  const redis = await startRedisServer(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const replicas = await startReplicas(t, 3, {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    redis: { url: redis.url },
    sessions: { store: 'redis' },
    catalog: { listChangedDebounceMs: 20 },
    logLevel: 'info'
  })
  const balancer = await startHaproxy(t, replicas.map(r => ({ name: r.name, port: r.port })))
  await waitFor(async () => Object.values(await balancer.serverStates()).filter(s => s === 'UP').length === 3, 'every replica UP in HAProxy', 15_000)
  const url = new URL('/mcp', balancer.url).href
  const alice = { authorization: `Bearer ${KEY}` }
  const { sessionId } = await rawInitialize(url, '2025-11-25', alice)
  const headers = { ...alice, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  // Every replica holds the session, so each survivor hears the change for it: it must still come once.
  for (const [i, r] of replicas.entries()) assert.equal((await rawPost(`${r.baseUrl}/mcp`, { jsonrpc: '2.0', id: 10 + i, method: 'tools/list', params: {} }, headers)).status, 200)

  const stream = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } })
  assert.equal(stream.status, 200)
  const holder = replicas.find(r => r.name === stream.headers.get(SERVED_BY_HEADER)) as Replica
  const [priming] = await readEvents(stream, events => events.length >= 1)
  assert.ok(priming?.id !== undefined, 'the stream\'s priming event carries an id to resume from')
  holder.kill('SIGKILL')
  assert.equal(await holder.exited, 'SIGKILL')
  await waitFor(async () => (await balancer.serverStates())[holder.name]?.startsWith('DOWN') === true, 'HAProxy to see the replica gone', 15_000)
  const survivors = replicas.filter(r => r !== holder)

  const added = await rawPost(url, { jsonrpc: '2.0', id: 20, method: 'tools/call', params: { name: 'web__add_tool', arguments: { name: 'while_nobody_carries' } } }, headers)
  assert.equal(added.status, 200)
  await waitFor(async () => await unheld(survivors, 'stored') + await unheld(survivors, 'duplicate') >= 2, 'both survivors to try to store the change for the stream nobody carries', 15_000)
  assert.equal(await unheld(survivors, 'stored'), 1, 'stored once, however many replicas computed it')

  const resumed = await fetch(url, { headers: { ...headers, accept: 'text/event-stream', 'last-event-id': priming.id } })
  assert.equal(resumed.status, 200)
  assert.notEqual(resumed.headers.get(SERVED_BY_HEADER), holder.name)
  const reading = readEvents(resumed, events => events.some(e => e.data.includes('"fence"')))
  // A log after the replay: everything the resumed stream sends before it is the replay and what was owed.
  assert.equal((await rawPost(url, { jsonrpc: '2.0', id: 21, method: 'tools/call', params: { name: 'web__log_later', arguments: { text: 'fence', delayMs: 50 } } }, headers)).status, 200)
  const events = await reading
  const fence = events.findIndex(e => e.data.includes('"fence"'))
  assert.ok(fence !== -1, `the log after the replay arrived: ${JSON.stringify(events)}`)
  const changes = events.slice(0, fence).filter(e => e.data.includes(CHANGE))
  assert.equal(changes.length, 1, `exactly one tools/list_changed, replayed: ${JSON.stringify(events)}`)
  const streamOf = (id: string | undefined): string | undefined => id?.slice(0, id.lastIndexOf('.'))
  assert.equal(streamOf(changes[0]?.id), streamOf(priming.id), 'replayed from the stream the client lost, with its id')
})
