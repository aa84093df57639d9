import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { RedisSessionStore } from '../../src/session/redis-session-store.ts'
import type { SessionMessage } from '../../src/session/session-store.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { waitFor } from '../helpers/start-gateway.ts'

const TIMEOUT_MS = 200

function store (t: TestContext, url: string, replica: string, errors: string[] = []): { store: RedisSessionStore, received: SessionMessage[] } {
  const s = new RedisSessionStore({ url, keyPrefix: 'bus-test', commandTimeoutMs: TIMEOUT_MS, ttlMs: 60_000, replica, onError: (op) => { errors.push(op) } })
  const received: SessionMessage[] = []
  s.onMessage((message) => { received.push(message) })
  t.after(() => s.close())
  return { store: s, received }
}

/** Publishes to `to`'s channel until it arrives: the first may go out before the subscription does. */
async function delivered (from: RedisSessionStore, to: { received: SessionMessage[] }, replica: string, what: string): Promise<void> {
  const message: SessionMessage = { kind: 'cancel', sessionId: 's1', requestId: what, reason: 'test' }
  await waitFor(() => {
    if (to.received.some(m => m.kind === 'cancel' && m.requestId === what)) return true
    from.publish(message, replica)
    return false
  }, `"${what}" to reach replica ${replica}`, 15_000)
}

test('the replica channel carries a message to its replica only, and the common channel to every other replica', async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t)
  const a = store(t, redis.url, 'a')
  const b = store(t, redis.url, 'b')
  const c = store(t, redis.url, 'c')
  await delivered(a.store, b, 'b', 'to b')
  assert.equal(c.received.length, 0, 'c does not hear what is meant for b')
  await waitFor(() => {
    if (b.received.some(m => m.kind === 'removed') && c.received.some(m => m.kind === 'removed')) return true
    a.store.publish({ kind: 'removed', sessionId: 's2' })
    return false
  }, 'a broadcast to reach b and c')
  // Every subscription is up now. One more message for b, then a broadcast behind it from the same
  // publisher: once c has the broadcast it would have had b's message before it.
  a.store.publish({ kind: 'cancel', sessionId: 's1', requestId: 'to b again', reason: 'test' }, 'b')
  a.store.publish({ kind: 'removed', sessionId: 's3' })
  await waitFor(() => c.received.some(m => m.kind === 'removed' && m.sessionId === 's3') && b.received.some(m => m.kind === 'cancel' && m.requestId === 'to b again'), 'the second broadcast to reach c, and the message to reach b')
  assert.deepEqual(c.received.filter(m => m.kind === 'cancel'), [], 'c does not hear what is meant for b')
  assert.equal(a.received.length, 0, 'a does not hear itself')
})

test('a replica whose subscription timed out (Redis not answering at start) subscribes once Redis answers', { timeout: 60_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t)
  redis.pause()
  const errors: string[] = []
  const late = store(t, redis.url, 'late', errors)
  // Past the command timeout and the connect timeout: the first SUBSCRIBE has failed and been dropped.
  await waitFor(() => errors.includes('subscribe'), 'the first SUBSCRIBE to fail')
  await new Promise(resolve => setTimeout(resolve, 2_500))
  redis.resume()
  const early = store(t, redis.url, 'early')
  await delivered(early.store, late, 'late', 'after the stall')
})

test('after Redis restarts empty, a replica hears its channel again', { timeout: 60_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t)
  const a = store(t, redis.url, 'a')
  const b = store(t, redis.url, 'b')
  await delivered(a.store, b, 'b', 'before')
  await redis.restart()
  await delivered(a.store, b, 'b', 'after the restart')
})
