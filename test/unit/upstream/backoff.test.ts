import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { BACKOFF_BASE_MS, BACKOFF_MAX_MS, RECONNECT_FAST_ATTEMPTS, RECONNECT_FAST_MAX_MS, backoffDelayMs, reconnectDelayMs } from '../../../src/upstream/backoff.ts'

const HIGH = (): number => 1
const LOW = (): number => 0

describe('backoffDelayMs', () => {
  it('waits up to the base delay on the first attempt', () => {
    assert.equal(backoffDelayMs(0, HIGH), BACKOFF_BASE_MS)
    assert.equal(backoffDelayMs(0, LOW), BACKOFF_BASE_MS / 2)
  })

  it('doubles the ceiling on each attempt', () => {
    for (let attempt = 0; attempt < 7; attempt++) {
      assert.equal(backoffDelayMs(attempt, HIGH), BACKOFF_BASE_MS * 2 ** attempt, `attempt ${attempt}`)
    }
    assert.deepEqual([0, 1, 2, 3].map(a => backoffDelayMs(a, HIGH, 100, 10_000)), [100, 200, 400, 800])
  })

  it('is capped at the maximum', () => {
    assert.equal(BACKOFF_MAX_MS, 30_000)
    for (const attempt of [7, 8, 20, 30, 31, 1000, Number.MAX_SAFE_INTEGER]) {
      const delay = backoffDelayMs(attempt, HIGH)
      assert.equal(delay, BACKOFF_MAX_MS, `attempt ${attempt}`)
      assert.ok(Number.isFinite(delay))
    }
    assert.equal(backoffDelayMs(10, HIGH, 100, 1000), 1000)
    assert.equal(backoffDelayMs(10, LOW, 100, 1000), 500)
  })

  it('never decreases as attempts grow', () => {
    let previous = 0
    for (let attempt = 0; attempt < 40; attempt++) {
      const delay = backoffDelayMs(attempt, HIGH)
      assert.ok(delay >= previous, `attempt ${attempt}`)
      previous = delay
    }
  })

  it('jitters within [ceiling/2, ceiling]', () => {
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt)
      assert.equal(backoffDelayMs(attempt, LOW), ceiling / 2)
      assert.equal(backoffDelayMs(attempt, HIGH), ceiling)
      for (const r of [0.001, 0.25, 0.5, 0.75, 0.999]) {
        const delay = backoffDelayMs(attempt, () => r)
        assert.ok(delay >= ceiling / 2 && delay <= ceiling, `attempt ${attempt}, random ${r}: ${delay}`)
      }
    }
  })

  it('spreads delays with the random source', () => {
    assert.equal(backoffDelayMs(4, () => 0.5), Math.round(4000 / 2 + 0.5 * 4000 / 2))
    assert.ok(backoffDelayMs(4, () => 0.1) < backoffDelayMs(4, () => 0.9))
  })

  it('returns whole milliseconds', () => {
    for (const r of [0.123, 0.456, 0.789]) assert.ok(Number.isInteger(backoffDelayMs(3, () => r)))
  })

  it('uses Math.random when no random source is given', () => {
    for (let i = 0; i < 50; i++) {
      const delay = backoffDelayMs(2)
      assert.ok(delay >= 500 && delay <= 1000, String(delay))
    }
  })
})

describe('reconnectDelayMs', () => {
  it('keeps the first ten reconnect delays of a lost connection within a second, so an upstream restarted on its address is found within a second of listening', () => {
    for (let attempt = 0; attempt < RECONNECT_FAST_ATTEMPTS; attempt++) {
      assert.ok(reconnectDelayMs(attempt, HIGH) <= RECONNECT_FAST_MAX_MS, `attempt ${attempt}: ${reconnectDelayMs(attempt, HIGH)} ms`)
    }
    assert.deepEqual([0, 1, 2, 3].map(a => reconnectDelayMs(a, HIGH)), [250, 500, 1000, 1000])
  })

  it('then doubles on from a second up to the cap, so an upstream that stays down is tried less and less often', () => {
    const after = [0, 1, 2, 3, 4, 5].map(n => reconnectDelayMs(RECONNECT_FAST_ATTEMPTS + n, HIGH))
    assert.deepEqual(after, [2000, 4000, 8000, 16_000, 30_000, 30_000])
    assert.equal(reconnectDelayMs(RECONNECT_FAST_ATTEMPTS, LOW), 1000)
  })
})
