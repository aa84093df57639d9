import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CallCancelledError, SwitchboardError } from '../../../../src/errors.ts'
import { failureStep } from '../../../../src/gateway/call-chain/failures.ts'
import { resultPhase, resultStep } from '../../../../src/gateway/call-chain/results.ts'
import { taskStep } from '../../../../src/gateway/call-chain/tasks.ts'
import type { ResultStep } from '../../../../src/gateway/call-chain/tool-call.ts'
import { TaskRelay } from '../../../../src/gateway/task-relay.ts'
import { CallSignal } from '../../../../src/protocol/cancel-signal.ts'
import { RpcError } from '../../../../src/protocol/json-rpc.ts'
import { unexpectedCause } from '../../../../src/protocol/error-forms.ts'
import { circuitOpenError } from '../../../../src/upstream/circuit-breaker.ts'
import { OK, alice, contextOf, entryOf, recordingNext, resolvedCall, viewDenying } from './call-fixtures.ts'

const codeOf = (result: Record<string, unknown>): unknown => ((result._meta as Record<string, unknown>)['switchboard/error'] as { code: string }).code

describe('failure step', () => {
  it('keeps an upstream result as it is, and records it and the outcome', async () => {
    const call = resolvedCall(entryOf('web__echo'))
    assert.equal(await failureStep()(call, recordingNext().next), OK)
    assert.deepEqual([call.outcome, call.result], ['ok', OK])
  })

  it('calls an upstream result that is an error a tool error', async () => {
    const call = resolvedCall(entryOf('web__echo'))
    await failureStep()(call, recordingNext({ content: [], isError: true }).next)
    assert.equal(call.outcome, 'tool_error')
  })

  it('leaves a refusal a step decided as that step said, result or error', async () => {
    const refused = resolvedCall(entryOf('web__echo'))
    const answer = { content: [], isError: true }
    assert.equal(await failureStep()(refused, async (c) => { c.outcome = 'rate_limited'; return answer }), answer)
    assert.deepEqual([refused.outcome, refused.result], ['rate_limited', answer])
    const unknown = resolvedCall(entryOf('web__echo'))
    const err = new RpcError(-32602, 'Unknown tool: web__echo')
    await assert.rejects(failureStep()(unknown, async (c) => { c.outcome = 'unknown_tool'; throw err }), (e: unknown) => e === err)
    assert.equal(unknown.outcome, 'unknown_tool')
  })

  it('turns failures of the path into results that say what happened, each with its outcome', async () => {
    const cases: Array<[Error, string, string]> = [
      [new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT'), 'timeout', 'SB_ERR_UPSTREAM_TIMEOUT'],
      [circuitOpenError('web', { state: 'open', retryAfterMs: 1500 }), 'circuit_open', 'SB_ERR_UPSTREAM_UNAVAILABLE'],
      [new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE'), 'unavailable', 'SB_ERR_UPSTREAM_UNAVAILABLE'],
      [new SwitchboardError('SB_ERR_UPSTREAM_CLOSED'), 'unavailable', 'SB_ERR_UPSTREAM_CLOSED'],
      [new SwitchboardError('SB_ERR_UPSTREAM_HTTP', undefined, { details: { status: 502 } }), 'upstream_error', 'SB_ERR_UPSTREAM_HTTP']
    ]
    for (const [err, outcome, code] of cases) {
      const call = resolvedCall(entryOf('web__echo'))
      const result = await failureStep()(call, recordingNext(err).next)
      assert.deepEqual([call.outcome, result.isError, codeOf(result), call.result], [outcome, true, code, result], code)
    }
  })

  it('passes an upstream JSON-RPC error on, and hides an unexpected failure behind a logged internal error', async () => {
    const upstreamError = new RpcError(-32000, 'upstream says no')
    const call = resolvedCall(entryOf('web__echo'))
    await assert.rejects(failureStep()(call, recordingNext(upstreamError).next), (e: unknown) => e === upstreamError)
    assert.equal(call.outcome, 'upstream_error')
    // Something unexpected: a bare -32603 that keeps the error as its cause, for the dispatcher's one log line.
    const bug = new TypeError('bug')
    const odd = resolvedCall(entryOf('web__echo'))
    await assert.rejects(failureStep()(odd, recordingNext(bug).next), (e: unknown) => e instanceof RpcError && e.code === -32603 && unexpectedCause(e) === bug)
  })

  it('calls a failure after the client cancelled a cancellation, whatever the failure', async () => {
    const signal = new CallSignal()
    signal.abort(new Error('gone'))
    const call = resolvedCall(entryOf('web__echo'), {}, contextOf(viewDenying(), {}, signal))
    await assert.rejects(failureStep()(call, recordingNext(new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT')).next), (e: unknown) => e instanceof CallCancelledError)
    assert.equal(call.outcome, 'cancelled')
  })
})

describe('task step', () => {
  const relay = (): TaskRelay => new TaskRelay({ maxTasks: 10, maxTtlMs: 60_000, replica: 'r1' })

  it('hands a created task on under the gateway id, remembered for the caller with its tool', async () => {
    const tasks = relay()
    const call = resolvedCall(entryOf('web__slow'), { task: { ttl: 1000 } })
    const result = await taskStep(tasks)(call, recordingNext({ task: { taskId: 'up-1', status: 'working' } }).next)
    const task = result.task as { taskId: string }
    assert.match(task.taskId, /^task-r1\./)
    const entry = tasks.find(task.taskId, alice)
    assert.deepEqual([entry?.upstream, entry?.upstreamId, entry?.tool, entry?.sessionId], ['web', 'up-1', 'web__slow', 'session-1'])
  })

  it('leaves an ordinary result alone', async () => {
    assert.equal(await taskStep(relay())(resolvedCall(entryOf('web__echo')), recordingNext().next), OK)
  })
})

describe('result phase', () => {
  const tag = (name: string): ResultStep => async (result, source) => ({ ...result, tags: [...(result.tags as string[] ?? []), `${name}:${source.upstream}:${source.tool ?? '?'}`] })

  it('is nothing at all without result steps, and runs the steps in order otherwise', async () => {
    assert.equal(resultPhase([]), undefined)
    const phase = resultPhase([tag('a'), tag('b')])
    assert.ok(phase)
    const result = await phase(OK, { ctx: contextOf(), upstream: 'web', tool: undefined })
    assert.deepEqual(result.tags, ['a:web:?', 'b:web:?'])
  })

  it('in the chain sees what the upstream answered, but not a created task (its result passes through tasks/result)', async () => {
    const step = resultStep(tag('scan'))
    const answered = await step(resolvedCall(entryOf('web__echo')), recordingNext().next)
    assert.deepEqual(answered.tags, ['scan:web:web__echo'])
    const created = await step(resolvedCall(entryOf('web__slow'), { task: {} }), recordingNext({ task: { taskId: 'up-1' } }).next)
    assert.equal(created.tags, undefined)
  })
})
