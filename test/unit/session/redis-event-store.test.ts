import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { Redis } from 'ioredis'
import { closeRedisClient, createRedisClient } from '../../../src/net/redis-client.ts'
import { formatEventId } from '../../../src/session/event-store.ts'
import { RedisEventStore, eventStoreKey } from '../../../src/session/redis-event-store.ts'
import type { RedisErrorSummary, RedisEventStoreOp, RedisEventStoreSettings } from '../../../src/session/redis-event-store.ts'
import { redisOrSkip, startRedisServer } from '../../helpers/redis-server.ts'
import { fill, msg, range, seqsOf } from '../../helpers/event-store-fixtures.ts'

const PREFIX = 'sbtest'
const TTL_MS = 60_000
const COMMAND_TIMEOUT_MS = 300
/** A bound, not a timing: nothing may hang on a dead Redis. */
const BOUND_MS = 3000
const SETTINGS: RedisEventStoreSettings = { keyPrefix: PREFIX, ttlMs: TTL_MS, maxEventsPerStream: 1000, maxStreamsPerSession: 100, commandTimeoutMs: COMMAND_TIMEOUT_MS }

async function readyClient (t: TestContext, url: string): Promise<Redis> {
  const client = createRedisClient({ url, commandTimeoutMs: 2000, connectionName: 'sbtest-admin' })
  t.after(() => closeRedisClient(client))
  if (client.status !== 'ready') await once(client, 'ready')
  return client
}

/** A store on its own (given) connection, like a replica. */
async function replica (t: TestContext, url: string, settings: Partial<RedisEventStoreSettings> = {}): Promise<RedisEventStore> {
  const store = new RedisEventStore({ ...SETTINGS, ...settings, client: await readyClient(t, url) })
  t.after(() => store.close())
  return store
}

/** Appends probes on throwaway streams until one replays: the store's own connection is up. */
let probes = 0
async function untilConnected (store: RedisEventStore): Promise<void> {
  const deadline = Date.now() + BOUND_MS
  for (;;) {
    const stream = `probe${probes++}`
    store.append('probe', stream, formatEventId(stream, 0), null)
    if (await store.replayAfter('probe', stream, formatEventId(stream, 0)) !== undefined) return
    if (Date.now() > deadline) throw new Error('the store did not connect')
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

async function bounded<T> (promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what} took over ${BOUND_MS} ms`)) }, BOUND_MS) })
  try {
    return await Promise.race([promise, bound])
  } finally {
    clearTimeout(timer)
  }
}

describe('RedisEventStore', () => {
  it('replays the events after each position, oldest first, and [] after the newest', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const store = await replica(t, redis.url)
    const ids = fill(store, 'S', 'st', range(0, 10))
    for (let i = 0; i < ids.length; i++) {
      const replay = await store.replayAfter('S', 'st', ids[i] as string)
      assert.deepEqual(replay, range(i + 1, 10).map(seq => ({ id: formatEventId('st', seq), message: msg(seq) })), `after ${i}`)
    }
    assert.deepEqual(await store.replayAfter('S', 'st', ids[9] as string), [])
  })

  it('resumes on another replica what the first one wrote before it died', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const a = new RedisEventStore({ ...SETTINGS, url: redis.url })
    t.after(() => a.close())
    await untilConnected(a)
    fill(a, 'S', 'st', range(0, 5))
    await a.close()
    const b = new RedisEventStore({ ...SETTINGS, url: redis.url })
    t.after(() => b.close())
    await untilConnected(b)
    assert.deepEqual(await b.replayAfter('S', 'st', 'st.1'), [2, 3, 4].map(seq => ({ id: `st.${seq}`, message: msg(seq) })))
    assert.deepEqual(await b.replayAfter('S', 'st', 'st.4'), [])
    assert.equal(await b.replayAfter('S', 'st', 'st.5'), undefined)
  })

  it('replays by seq when the caller leaves gaps, but only after ids it issued', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const store = await replica(t, redis.url)
    fill(store, 'S', 'st', [1, 5, 6, 100])
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.5')), [6, 100])
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.1')), [5, 6, 100])
    for (const afterSeq of [0, 2, 7, 101]) assert.equal(await store.replayAfter('S', 'st', `st.${afterSeq}`), undefined, `after ${afterSeq}`)
  })

  it('returns undefined for an unknown session, stream or id, or an id of another stream', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const store = await replica(t, redis.url)
    fill(store, 'S', 'a', [0, 1, 2])
    fill(store, 'S', 'b', [0, 1, 2])
    assert.equal(await store.replayAfter('nope', 'a', 'a.0'), undefined)
    assert.equal(await store.replayAfter('S', 'c', 'c.0'), undefined)
    assert.equal(await store.replayAfter('S', 'a', 'b.0'), undefined, 'the id names stream b')
    assert.equal(await store.replayAfter('S', 'a', 'a.3'), undefined, 'never issued')
    for (const garbage of ['', 'a', 'a.-1', 'a.01', 'a.0.0', 'x'.repeat(300)]) {
      assert.equal(await store.replayAfter('S', 'a', garbage), undefined)
    }
    assert.equal(await store.replayAfter('S:a', 'a', 'a.0'), undefined, 'a session id that cannot name a key')
  })

  it('refuses to replay past events trimmed by maxEventsPerStream, but not from the newest trimmed one', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const admin = await readyClient(t, redis.url)
    // MAXLEN ~ drops whole radix-tree nodes; with one entry per node it trims exactly, so the test
    // knows which events are gone while exercising the production command.
    await admin.config('SET', 'stream-node-max-entries', '1')
    const store = await replica(t, redis.url, { maxEventsPerStream: 3 })
    fill(store, 'S', 'st', range(0, 10))
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.7')), [8, 9])
    assert.equal(await admin.xlen(eventStoreKey(PREFIX, 'S', 'st')), 3)
    // Seq 6 itself is gone, but nothing after it is: the client that saw it loses nothing.
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.6')), [7, 8, 9])
    for (const seq of [0, 4, 5]) assert.equal(await store.replayAfter('S', 'st', `st.${seq}`), undefined, `after ${seq}`)
  })

  it('keeps maxStreamsPerSession streams, deleting the one appended to least recently, across replicas', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const admin = await readyClient(t, redis.url)
    const a = await replica(t, redis.url, { maxStreamsPerSession: 2 })
    const b = await replica(t, redis.url, { maxStreamsPerSession: 2 })
    // Each replica's appends are settled before the next replica writes (a replay waits for its own
    // writes): two clients' commands reach Redis in no fixed order, and the order is what is tested.
    fill(a, 'S', 'a', [0, 1])
    await a.replayAfter('S', 'a', 'a.0')
    fill(b, 'S', 'b', [0, 1])
    await b.replayAfter('S', 'b', 'b.0')
    fill(a, 'S', 'c', [0, 1])
    assert.equal(await a.replayAfter('S', 'a', 'a.0'), undefined, 'oldest stream evicted whole')
    assert.equal(await admin.exists(eventStoreKey(PREFIX, 'S', 'a')), 0)
    assert.deepEqual(seqsOf(await a.replayAfter('S', 'b', 'b.0')), [1])
    fill(b, 'S', 'b', [2])
    fill(b, 'S', 'd', [0])
    assert.equal(await b.replayAfter('S', 'c', 'c.0'), undefined, 'c was idle longer than b')
    assert.deepEqual(seqsOf(await a.replayAfter('S', 'b', 'b.0')), [1, 2])
    assert.deepEqual(seqsOf(await a.replayAfter('S', 'd', 'd.0')), [])
    assert.deepEqual(await admin.zrange(eventStoreKey(PREFIX, 'S'), '0', '-1'), ['b', 'd'])
  })

  it('dropSession deletes every key of that session and only of that session', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const admin = await readyClient(t, redis.url)
    const store = await replica(t, redis.url)
    fill(store, 'S1', 'a', [0, 1])
    fill(store, 'S1', 'b', [0, 1])
    fill(store, 'S2', 'a', [0, 1])
    assert.deepEqual(seqsOf(await store.replayAfter('S1', 'b', 'b.0')), [1])
    assert.equal((await admin.keys(`${PREFIX}:events:{S1}*`)).length, 3)
    store.dropSession('S1')
    store.dropSession('unknown')
    assert.equal(await store.replayAfter('S1', 'a', 'a.0'), undefined)
    assert.deepEqual(await admin.keys(`${PREFIX}:events:{S1}*`), [])
    assert.deepEqual((await admin.keys(`${PREFIX}:*`)).sort(), [eventStoreKey(PREFIX, 'S2'), eventStoreKey(PREFIX, 'S2', 'a')])
    fill(store, 'S1', 'a', [0, 1])
    assert.deepEqual(seqsOf(await store.replayAfter('S1', 'a', 'a.0')), [1], 'a later session with that id starts empty')
  })

  it('sets the TTL on the stream and the session set, and refreshes it on append', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const admin = await readyClient(t, redis.url)
    const store = await replica(t, redis.url)
    fill(store, 'S', 'st', [0])
    assert.deepEqual(await store.replayAfter('S', 'st', 'st.0'), [])
    for (const key of [eventStoreKey(PREFIX, 'S'), eventStoreKey(PREFIX, 'S', 'st')]) {
      const ttl = await admin.pttl(key)
      assert.ok(ttl > 0 && ttl <= TTL_MS, `${key}: ${ttl}`)
      await admin.pexpire(key, 5000)
    }
    fill(store, 'S', 'st', [1])
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.0')), [1])
    for (const key of [eventStoreKey(PREFIX, 'S'), eventStoreKey(PREFIX, 'S', 'st')]) {
      assert.ok(await admin.pttl(key) > 5000, `${key} refreshed`)
    }
  })

  it('rejects an append with a malformed, foreign or non-increasing id, or an unserialisable message', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const store = await replica(t, redis.url)
    fill(store, 'S', 'a', [5])
    assert.throws(() => { store.append('S', 'a', 'b.6', msg(6)) }, TypeError)
    assert.throws(() => { store.append('S', 'a', 'garbage', msg(6)) }, TypeError)
    assert.throws(() => { store.append('S', 'a', 'a.5', msg(5)) }, RangeError)
    assert.throws(() => { store.append('S', 'a', 'a.4', msg(4)) }, RangeError)
    assert.throws(() => { store.append('S', 'a', 'a.6', undefined) }, TypeError)
    assert.throws(() => { store.append('S', 'a', 'a.6', { n: 1n }) }, TypeError)
    assert.throws(() => { store.append('S:x', 'a', 'a.6', msg(6)) }, TypeError)
    assert.deepEqual(await store.replayAfter('S', 'a', 'a.5'), [], 'nothing was recorded')
  })

  it('keeps appending without throwing while Redis is dead, reports it, refuses replays in bounded time, and refuses replays across the lost events', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const errors: Array<{ op: RedisEventStoreOp, err: RedisErrorSummary }> = []
    const store = new RedisEventStore({ ...SETTINGS, url: redis.url, onError: (op, err) => { errors.push({ op, err }) } })
    t.after(() => store.close())
    await untilConnected(store)
    errors.length = 0 // probes sent before the first connection fail fast
    fill(store, 'S', 'st', range(0, 3))
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.0')), [1, 2])
    assert.equal(errors.length, 0)

    await redis.kill()
    fill(store, 'S', 'st', range(3, 6))
    store.dropSession('other')
    assert.equal(await bounded(store.replayAfter('S', 'st', 'st.0'), 'a replay with Redis dead'), undefined)
    assert.ok(errors.some(e => e.op === 'append'), JSON.stringify(errors))
    assert.ok(errors.some(e => e.op === 'replay'), JSON.stringify(errors))
    for (const { err } of errors) {
      assert.deepEqual(Object.keys(err).filter(k => !['type', 'message', 'code'].includes(k)), [], 'only type, message and code')
    }

    // Redis comes back empty: events 3..5 are lost for good, so no replay may silently skip them.
    await redis.restart()
    await untilConnected(store)
    fill(store, 'S', 'st', range(6, 8))
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.5')), [6, 7], 'nothing after 5 is missing')
    assert.equal(await store.replayAfter('S', 'st', 'st.4'), undefined, 'seq 5 was lost')
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.6')), [7])
  })

  it('refuses a replay within its bound while Redis hangs, and closes within a bound', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const errors: RedisEventStoreOp[] = []
    const store = new RedisEventStore({ ...SETTINGS, url: redis.url, onError: (op) => { errors.push(op) } })
    t.after(() => { redis.resume() })
    t.after(() => store.close())
    await untilConnected(store)
    fill(store, 'S', 'st', [0, 1])
    redis.pause()
    fill(store, 'S', 'st', [2])
    assert.equal(await bounded(store.replayAfter('S', 'st', 'st.0'), 'a replay with Redis stuck'), undefined)
    assert.ok(errors.includes('replay'))
    await bounded(store.close(), 'close with Redis stuck')
    store.append('S', 'st', 'st.3', msg(3))
    assert.equal(await store.replayAfter('S', 'st', 'st.0'), undefined, 'closed')
  })

  it('leaves a client it was given open on close', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const client = await readyClient(t, redis.url)
    const store = new RedisEventStore({ ...SETTINGS, client })
    fill(store, 'S', 'st', [0, 1])
    await store.close()
    assert.equal(client.status, 'ready')
    assert.equal(await client.xlen(eventStoreKey(PREFIX, 'S', 'st')), 2, 'pending writes were flushed before close returned')
  })

  it('names its keys after the prefix, the session (a Cluster hash tag, one slot per session) and the stream', () => {
    assert.equal(eventStoreKey('sb', 'S'), 'sb:events:{S}')
    assert.equal(eventStoreKey('sb', 'S', 'st'), 'sb:events:{S}:st')
    assert.throws(() => eventStoreKey('sb', 'a:b'), TypeError)
    assert.throws(() => eventStoreKey('sb', 'a}b'), TypeError)
    assert.throws(() => eventStoreKey('sb', ''), TypeError)
  })

  it('rejects settings that are not positive integers', () => {
    for (const name of ['ttlMs', 'maxEventsPerStream', 'maxStreamsPerSession', 'commandTimeoutMs'] as const) {
      for (const bad of [0, -1, 1.5, Number.NaN]) {
        assert.throws(() => new RedisEventStore({ ...SETTINGS, [name]: bad, url: 'redis://127.0.0.1:1' }), RangeError, `${name} ${bad}`)
      }
    }
  })
})
