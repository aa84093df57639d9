import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { type Restarting, untilRestarted } from '../../../src/upstream/restart-wait.ts'

/** A connection whose state the test moves by hand. */
function connection (state: Restarting['state'], nextAttempt = Date.now()) {
  let waiters: Array<() => void> = []
  const c = {
    name: 'up',
    lastError: 'connection closed' as string | undefined,
    state,
    nextAttempt,
    ended: false,
    onNextState (listener: () => void) {
      waiters.push(listener)
      return () => { waiters = waiters.filter(w => w !== listener) }
    },
    move (to: Restarting['state']) {
      c.state = to
      const woken = waiters
      waiters = []
      for (const wake of woken) wake()
    },
    get waiting () { return waiters.length }
  }
  return c
}

const unavailable = (pattern: RegExp) => (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE') && pattern.test(err.message)

describe('untilRestarted', () => {
  it('resolves at once, with the whole timeout, when the connection is ready', async () => {
    assert.equal(await untilRestarted(connection('ready'), { timeoutMs: 1000 }), 1000)
    assert.equal(await untilRestarted(connection('ready'), {}), undefined)
  })

  it('waits through the backoff and the attempt, then resolves with what is left of the timeout', async () => {
    const c = connection('backoff', Date.now() + 10)
    const waited = untilRestarted(c, { timeoutMs: 5000 })
    c.move('connecting')
    c.move('ready')
    const left = await waited
    assert.ok(left !== undefined && left > 0 && left <= 5000)
    assert.equal(c.waiting, 0, 'no listener left behind')
  })

  it('fails with SB_ERR_UPSTREAM_UNAVAILABLE when the attempt it waited for fails', async () => {
    const c = connection('connecting')
    const waited = untilRestarted(c, { timeoutMs: 5000 })
    c.move('backoff')
    await assert.rejects(waited, unavailable(/upstream up is not connected \(connection closed\)/))
  })

  it('fails at once when the next attempt starts only after the request\'s deadline', async () => {
    await assert.rejects(untilRestarted(connection('backoff', Date.now() + 60_000), { timeoutMs: 100 }), unavailable(/next attempt comes after/))
  })

  it('fails when the deadline passes first, and leaves no listener behind', async () => {
    const c = connection('connecting')
    await assert.rejects(untilRestarted(c, { timeoutMs: 20 }), unavailable(/not back within/))
    assert.equal(c.waiting, 0)
  })

  it('fails at once for a connection that is closed or retired', async () => {
    await assert.rejects(untilRestarted(connection('closed'), { timeoutMs: 1000 }), unavailable(/not connected/))
    const retired = connection('backoff')
    retired.ended = true
    await assert.rejects(untilRestarted(retired, { timeoutMs: 1000 }), unavailable(/not connected/))
  })

  it('ends the wait with the cancellation when the client cancels', async () => {
    const c = connection('connecting')
    const signal = new CallSignal()
    const waited = untilRestarted(c, { timeoutMs: 5000, signal })
    const reason = new Error('cancelled by the client')
    signal.abort(reason)
    await assert.rejects(waited, (err: unknown) => err === reason)
    assert.equal(c.waiting, 0)
  })
})
