import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { compose } from '../../../../src/gateway/call-chain/compose.ts'
import type { CallStep } from '../../../../src/gateway/call-chain/tool-call.ts'
import { OK, entryOf, recordingNext, resolvedCall } from './call-fixtures.ts'

describe('compose', () => {
  it('runs the steps outermost first, then the last function, and hands the result back out through them', async () => {
    const order: string[] = []
    const step = (name: string): CallStep => async (call, next) => {
      order.push(`${name} in`)
      const result = await next(call)
      order.push(`${name} out`)
      return { ...result, seen: [...(result.seen as string[] ?? []), name] }
    }
    const last = recordingNext()
    const chain = compose([step('a'), step('b')], last.next)
    const result = await chain(resolvedCall(entryOf('web__echo')))
    assert.deepEqual(order, ['a in', 'b in', 'b out', 'a out'])
    assert.deepEqual(result.seen, ['b', 'a'])
    assert.equal(last.seen.length, 1)
  })

  it('stops where a step answers itself: later steps and the last function never run', async () => {
    const refuse: CallStep = async () => ({ refused: true })
    const never: CallStep = async () => { throw new Error('must not run') }
    const last = recordingNext()
    const result = await compose([refuse, never], last.next)(resolvedCall(entryOf('web__echo')))
    assert.deepEqual(result, { refused: true })
    assert.equal(last.seen.length, 0)
  })

  it('with no steps is the last function itself', async () => {
    const last = recordingNext()
    assert.equal(compose([], last.next), last.next)
    assert.equal(await compose([], last.next)(resolvedCall(entryOf('web__echo'))), OK)
  })
})
