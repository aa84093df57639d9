import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SwitchboardError } from '../../../src/errors.ts'
import { encodeJson } from '../../../src/protocol/encode-json.ts'
import { classifySendFailure } from '../../../src/upstream/send-failure.ts'

function thrownBy (fn: () => unknown): unknown {
  try {
    fn()
  } catch (err: unknown) {
    return err
  }
  assert.fail('did not throw')
}

describe('classifySendFailure', () => {
  let deep: Record<string, unknown> = {}
  for (let i = 0; i < 20_000; i++) deep = { a: deep }
  const cyclic: Record<string, unknown> = {}
  cyclic.self = cyclic

  it('fails only the message when it cannot be encoded, whichever transport threw', () => {
    const ours = thrownBy(() => encodeJson({ deep }))
    const sdkStackOverflow = thrownBy(() => JSON.stringify({ deep }))
    const sdkCycle = thrownBy(() => JSON.stringify(cyclic))
    const sdkBigInt = thrownBy(() => JSON.stringify({ n: 1n }))
    for (const err of [ours, sdkStackOverflow, sdkCycle, sdkBigInt]) {
      const failure = classifySendFailure(err)
      assert.equal(failure.lost, false, String(err))
      assert.equal(failure.error.code, 'SB_ERR_MESSAGE_UNSERIALIZABLE')
    }
    assert.equal(classifySendFailure(ours).error.details.tooDeep, true)
    assert.equal(classifySendFailure(sdkStackOverflow).error.details.tooDeep, true)
    assert.equal(classifySendFailure(sdkCycle).error.details.tooDeep, false)
  })

  it('still takes a network failure or a dead process for a lost connection', () => {
    assert.equal(classifySendFailure(new TypeError('fetch failed')).lost, true)
    assert.equal(classifySendFailure(new Error('upstream process is not running')).lost, true)
    assert.equal(classifySendFailure(new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'cannot reach the upstream: ECONNREFUSED')).lost, true)
    assert.equal(classifySendFailure(Object.assign(new Error('x'), { status: 500 })).lost, false)
  })
})
