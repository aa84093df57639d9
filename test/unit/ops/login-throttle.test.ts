import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createLoginThrottle } from '../../../src/ops/login-throttle.ts'

function clock (): { now: () => number, advance: (ms: number) => void } {
  let at = 5_000_000
  return { now: () => at, advance: (ms) => { at += ms } }
}

describe('the failed-login throttle', () => {
  it('lets ten failures a minute through and refuses the next attempt until the minute is over', () => {
    const time = clock()
    const throttle = createLoginThrottle({ now: time.now })
    for (let i = 0; i < 10; i++) {
      assert.equal(throttle.retryAfterMs('10.0.0.1'), 0, `attempt ${i + 1}`)
      throttle.failed('10.0.0.1')
    }
    assert.equal(throttle.retryAfterMs('10.0.0.1'), 60_000)
    assert.equal(throttle.retryAfterMs('10.0.0.2'), 0, 'another address is not held back')
    time.advance(59_999)
    assert.equal(throttle.retryAfterMs('10.0.0.1'), 1)
    time.advance(1)
    assert.equal(throttle.retryAfterMs('10.0.0.1'), 0)
  })

  it('a success clears the address\'s failures', () => {
    const throttle = createLoginThrottle({ now: clock().now })
    for (let i = 0; i < 9; i++) throttle.failed('a')
    throttle.succeeded('a')
    for (let i = 0; i < 9; i++) throttle.failed('a')
    assert.equal(throttle.retryAfterMs('a'), 0)
    throttle.failed('a')
    assert.ok(throttle.retryAfterMs('a') > 0)
  })

  it('holds at most maxEntries addresses: expired ones go first, then the oldest', () => {
    const time = clock()
    const throttle = createLoginThrottle({ now: time.now, maxEntries: 3, maxFailures: 1 })
    throttle.failed('old')
    time.advance(60_000)
    throttle.failed('b')
    throttle.failed('c')
    throttle.failed('d')
    assert.equal(throttle.size, 3)
    assert.equal(throttle.retryAfterMs('old'), 0)
    assert.ok(throttle.retryAfterMs('b') > 0)
    for (let i = 0; i < 100; i++) throttle.failed(`flood-${i}`)
    assert.equal(throttle.size, 3, 'a flood of addresses does not grow the map')
    assert.ok(throttle.retryAfterMs('flood-99') > 0)
  })
})
