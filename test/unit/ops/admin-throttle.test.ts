import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createAdminThrottle, createMemoryThrottleStore, throttleDelayMs } from '../../../src/ops/admin-throttle.ts'

function clock (): { now: () => number, advance: (ms: number) => void } {
  let at = 5_000_000
  return { now: () => at, advance: (ms) => { at += ms } }
}

describe('the admin wrong-token throttle', () => {
  it('doubles the hold with each failure past the free ones, up to the cap', () => {
    assert.deepEqual([1, 9, 10, 11, 12, 14, 15, 16, 60, 5000].map(f => throttleDelayMs(f, 10, 1_000, 30_000)),
      [0, 0, 1_000, 2_000, 4_000, 16_000, 30_000, 30_000, 30_000, 30_000])
  })

  it('lets ten failures through, then holds the address back; another address is not held', async () => {
    const time = clock()
    const throttle = createAdminThrottle({}, time.now)
    for (let i = 0; i < 10; i++) {
      assert.equal(await throttle.retryAfterMs('10.0.0.1'), 0, `attempt ${i + 1}`)
      await throttle.failed('10.0.0.1')
    }
    assert.equal(await throttle.retryAfterMs('10.0.0.1'), 1_000)
    assert.equal(await throttle.retryAfterMs('10.0.0.2'), 0)
    time.advance(1_000)
    assert.equal(await throttle.retryAfterMs('10.0.0.1'), 0, 'the hold is over: the next wrong token is looked at')
    await throttle.failed('10.0.0.1')
    assert.equal(await throttle.retryAfterMs('10.0.0.1'), 2_000)
  })

  it('forgets an address a minute after its last failure, not while it is held', async () => {
    const time = clock()
    const store = createMemoryThrottleStore({ forgetMs: 60_000 })
    const throttle = createAdminThrottle({ freeFailures: 1, baseDelayMs: 50_000, maxDelayMs: 120_000, store }, time.now)
    await throttle.failed('a')
    await throttle.failed('a')
    assert.equal(await throttle.retryAfterMs('a'), 100_000)
    time.advance(90_000)
    assert.equal(await throttle.retryAfterMs('a'), 10_000, 'held past the forget time')
    time.advance(10_000)
    assert.equal(await throttle.retryAfterMs('a'), 0)
    time.advance(60_000)
    assert.equal(await store.read('a', time.now()), undefined)
  })

  it('keeps at most maxEntries addresses, dropping the quietest first', async () => {
    const time = clock()
    const store = createMemoryThrottleStore({ maxEntries: 3 })
    const throttle = createAdminThrottle({ freeFailures: 1, store }, time.now)
    for (const address of ['old', 'b', 'c']) {
      await throttle.failed(address)
      time.advance(1)
    }
    await throttle.failed('b')
    await throttle.failed('d')
    assert.equal(store.size, 3)
    assert.equal(await store.read('old', time.now()), undefined)
    assert.equal((await store.read('b', time.now()))?.failures, 2)
    for (let i = 0; i < 100; i++) await throttle.failed(`flood-${i}`)
    assert.equal(store.size, 3, 'a flood of addresses does not grow the map')
  })
})
