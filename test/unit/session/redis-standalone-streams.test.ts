import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { Redis } from 'ioredis'
import { closeRedisClient, createRedisClient } from '../../../src/net/redis-client.ts'
import { formatEventId } from '../../../src/session/event-store.ts'
import { RedisEventStore } from '../../../src/session/redis-event-store.ts'
import { sessionKeys } from '../../../src/session/redis-session-store.ts'
import { redisOrSkip, startRedisServer } from '../../helpers/redis-server.ts'

const PREFIX = 'sbtest'
const CHANGE = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' }

async function readyClient (t: TestContext, url: string, name: string): Promise<Redis> {
  const client = createRedisClient({ url, commandTimeoutMs: 2000, connectionName: name, queueWhileOffline: true })
  t.after(() => closeRedisClient(client))
  if (client.status !== 'ready') await once(client, 'ready')
  return client
}

/** One replica's event store, and its subscription to its own channel: it is alive while that lasts. */
async function replica (t: TestContext, url: string, tag: string): Promise<{ store: RedisEventStore, die: () => Promise<void> }> {
  const store = new RedisEventStore({ keyPrefix: PREFIX, ttlMs: 60_000, maxEventsPerStream: 100, maxStreamsPerSession: 10, commandTimeoutMs: 2000, replica: tag, client: await readyClient(t, url, `events-${tag}`) })
  t.after(() => store.close())
  const subscriber = await readyClient(t, url, `bus-${tag}`)
  const channel = sessionKeys(PREFIX).replicaBus(tag)
  // As RedisSessionStore does: subscribed again after a reconnect (Redis restarted).
  subscriber.on('ready', () => { subscriber.subscribe(channel).catch(() => {}) })
  await subscriber.subscribe(channel)
  return { store, die: async () => { await closeRedisClient(subscriber) } }
}

describe('RedisStandaloneStreams', () => {
  it('appends a change to the stream of a replica that is gone, once across replicas, where a resume replays it after the last event; not while that replica lives', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const [a, b, c] = [await replica(t, redis.url, 'ra'), await replica(t, redis.url, 'rb'), await replica(t, redis.url, 'rc')]
    const streamId = 'standaloneA'
    a.store.standalone?.carry('s1', streamId)
    a.store.append('s1', streamId, formatEventId(streamId, 0), null)
    a.store.append('s1', streamId, formatEventId(streamId, 1), { jsonrpc: '2.0', method: 'notifications/message', params: {} })
    // A's own replay runs after its writes: once it sees both, the carrier record is there too.
    assert.equal((await a.store.replayAfter('s1', streamId, formatEventId(streamId, 0)))?.length, 1)

    assert.equal(await b.store.standalone?.appendUnheld('s1', 'tools:1', CHANGE), 'held', 'A lives: it sends the change itself')
    assert.equal(await b.store.standalone?.appendUnheld('nobody', 'tools:1', CHANGE), 'no_stream')
    await a.die()
    assert.equal(await b.store.standalone?.appendUnheld('s1', 'tools:1', CHANGE), 'stored')
    assert.equal(await c.store.standalone?.appendUnheld('s1', 'tools:1', CHANGE), 'duplicate', 'C computed the same change: not twice')
    assert.deepEqual(await c.store.replayAfter('s1', streamId, formatEventId(streamId, 1)), [{ id: formatEventId(streamId, 2), message: CHANGE }])
    assert.equal(await c.store.standalone?.appendUnheld('s1', 'tools:2', CHANGE), 'stored', 'a later change is another notification')
    assert.deepEqual((await b.store.replayAfter('s1', streamId, formatEventId(streamId, 0)))?.map(e => e.id), [1, 2, 3].map(seq => formatEventId(streamId, seq)))
  })

  it('after Redis restarted empty, the replica carrying a stream says so again, so the stream it goes on with is taken over when it dies', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const [a, b] = [await replica(t, redis.url, 'ra'), await replica(t, redis.url, 'rb')]
    const streamId = 'standaloneA'
    a.store.standalone?.carry('s1', streamId)
    a.store.append('s1', streamId, formatEventId(streamId, 0), null)
    await redis.restart()
    // A's stream goes on after the restart; its replay works once A's connection is back.
    let seq = 1
    for (;;) {
      a.store.append('s1', streamId, formatEventId(streamId, seq), { jsonrpc: '2.0', method: 'notifications/message', params: { seq } })
      if ((await a.store.replayAfter('s1', streamId, formatEventId(streamId, seq - 1)))?.length === 1) break
      seq++
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    await a.die()
    assert.equal(await b.store.standalone?.appendUnheld('s1', 'tools:1', CHANGE), 'stored')
    assert.deepEqual(await b.store.replayAfter('s1', streamId, formatEventId(streamId, seq)), [{ id: formatEventId(streamId, seq + 1), message: CHANGE }])
  })
})
