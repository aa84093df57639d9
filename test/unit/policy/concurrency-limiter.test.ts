import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ConcurrencyLimiter } from '../../../src/policy/concurrency-limiter.ts'
import type { Release } from '../../../src/policy/concurrency-limiter.ts'

function slot (result: Release | 'busy'): Release {
  assert.equal(typeof result, 'function', 'expected a slot, got busy')
  return result as Release
}

const tick = async (): Promise<void> => await new Promise(resolve => setImmediate(resolve))

describe('concurrency limiter', () => {
  it('runs up to `limit` calls at once and queues the next', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 2, maxWaitMs: 5000, maxQueued: 10 })
    const a = slot(await limiter.acquire())
    const b = slot(await limiter.acquire())
    assert.equal(limiter.running, 2)
    let settled = false
    const pending = limiter.acquire()
    void pending.then(() => { settled = true })
    assert.equal(limiter.queued, 1, 'queued as soon as acquire returns')
    await tick()
    assert.equal(settled, false)
    a()
    slot(await pending)()
    b()
    assert.equal(limiter.running, 0)
    assert.equal(limiter.queued, 0)
  })

  it('hands a released slot to waiters in arrival order, ahead of newcomers', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, maxWaitMs: 5000, maxQueued: 10 })
    const first = slot(await limiter.acquire())
    const order: number[] = []
    const waiters = [1, 2, 3].map(n => limiter.acquire().then(r => { order.push(n); return slot(r) }))
    first()
    assert.equal(limiter.running, 1, 'the slot passed on, not freed')
    // A newcomer arriving now queues behind the three.
    const late = limiter.acquire().then(r => { order.push(4); return slot(r) })
    for (const w of [...waiters, late]) (await w)()
    assert.deepEqual(order, [1, 2, 3, 4])
    assert.equal(limiter.running, 0)
  })

  it('refuses at once when maxQueued calls already wait', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, maxWaitMs: 5000, maxQueued: 1 })
    const held = slot(await limiter.acquire())
    const waiting = limiter.acquire()
    assert.equal(await limiter.acquire(), 'busy')
    assert.equal(limiter.queued, 1)
    held()
    slot(await waiting)()
    assert.equal(limiter.running, 0)
  })

  it('refuses at once with maxQueued 0 or maxWaitMs 0 when every slot is taken', async () => {
    for (const config of [{ limit: 1, maxWaitMs: 5000, maxQueued: 0 }, { limit: 1, maxWaitMs: 0, maxQueued: 10 }]) {
      const limiter = new ConcurrencyLimiter(config)
      const held = slot(await limiter.acquire())
      assert.equal(await limiter.acquire(), 'busy')
      held()
      slot(await limiter.acquire())()
    }
  })

  it('answers busy to a waiter that waited maxWaitMs and forgets it', async (t) => {
    // The limiter's timers are unref'd (a server keeps the process alive); here nothing else would.
    const keepAlive = setInterval(() => {}, 1000)
    t.after(() => { clearInterval(keepAlive) })
    const limiter = new ConcurrencyLimiter({ limit: 1, maxWaitMs: 30, maxQueued: 10 })
    const held = slot(await limiter.acquire())
    const started = Date.now()
    assert.equal(await limiter.acquire(), 'busy')
    assert.ok(Date.now() - started >= 25)
    assert.equal(limiter.queued, 0)
    held()
    assert.equal(limiter.running, 0)
  })

  it('answers busy to an aborted waiter, drops it from the queue and skips it on release', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, maxWaitMs: 5000, maxQueued: 10 })
    const held = slot(await limiter.acquire())
    const controller = new AbortController()
    const aborted = limiter.acquire(controller.signal)
    const next = limiter.acquire()
    controller.abort()
    assert.equal(await aborted, 'busy')
    assert.equal(limiter.queued, 1)
    held()
    slot(await next)()
    assert.equal(limiter.running, 0)
  })

  it('answers busy at once for a signal that is already aborted', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, maxWaitMs: 5000, maxQueued: 10 })
    assert.equal(await limiter.acquire(AbortSignal.abort()), 'busy')
    assert.equal(limiter.running, 0)
  })

  it('ignores a second release of the same slot', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 2, maxWaitMs: 5000, maxQueued: 10 })
    const a = slot(await limiter.acquire())
    const b = slot(await limiter.acquire())
    a()
    a()
    assert.equal(limiter.running, 1)
    const c = slot(await limiter.acquire())
    a()
    assert.equal(limiter.running, 2)
    b()
    c()
    assert.equal(limiter.running, 0)
  })

  it('keeps the slot of a served waiter whose signal aborts afterwards', async () => {
    const limiter = new ConcurrencyLimiter({ limit: 1, maxWaitMs: 60_000, maxQueued: 10 })
    const held = slot(await limiter.acquire())
    const controller = new AbortController()
    const waiting = limiter.acquire(controller.signal)
    held()
    const release = slot(await waiting)
    controller.abort()
    assert.equal(limiter.running, 1)
    release()
    assert.equal(limiter.running, 0)
  })
})
