import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SwitchboardError } from '../../../src/errors.ts'
import { RpcError } from '../../../src/protocol/json-rpc.ts'
import { circuitOpenError } from '../../../src/upstream/circuit-breaker.ts'
import { MIN_ATTEMPT_MS, isRetrySafeTool, retryDecision, type RetryInput } from '../../../src/gateway/retry-decision.ts'
import { withRetries } from '../../../src/gateway/with-retries.ts'

const closed = new SwitchboardError('SB_ERR_UPSTREAM_CLOSED')
const unavailable = new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE')

function input (overrides: Partial<RetryInput> = {}): RetryInput {
  return { err: closed, attempt: 1, maxAttempts: 3, backoffMs: 100, safe: true, remainingMs: 10_000, aborted: false, random: () => 0.5, ...overrides }
}

describe('retry decision', () => {
  it('qualifies tools annotated readOnlyHint or idempotentHint, and no others', () => {
    assert.equal(isRetrySafeTool({ name: 'a', annotations: { readOnlyHint: true } }), true)
    assert.equal(isRetrySafeTool({ name: 'a', annotations: { idempotentHint: true, readOnlyHint: false } }), true)
    assert.equal(isRetrySafeTool({ name: 'a', annotations: { readOnlyHint: false, destructiveHint: false } }), false)
    assert.equal(isRetrySafeTool({ name: 'a', annotations: { readOnlyHint: 'true' } }), false)
    assert.equal(isRetrySafeTool({ name: 'a' }), false)
  })

  it('retries a safe tool after a lost or absent connection', () => {
    assert.deepEqual(retryDecision(input({ err: closed })), { retry: true, delayMs: 75 })
    assert.deepEqual(retryDecision(input({ err: unavailable })), { retry: true, delayMs: 75 })
  })

  it('never retries a timeout, a JSON-RPC error, an HTTP status or an open circuit', () => {
    assert.deepEqual(retryDecision(input({ err: new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT') })), { retry: false, reason: 'not_retryable' })
    assert.deepEqual(retryDecision(input({ err: new RpcError(-32603, 'oops') })), { retry: false, reason: 'not_retryable' })
    assert.deepEqual(retryDecision(input({ err: new SwitchboardError('SB_ERR_UPSTREAM_HTTP', 'bad gateway', { details: { status: 503 } }) })), { retry: false, reason: 'not_retryable' })
    assert.deepEqual(retryDecision(input({ err: circuitOpenError('web', { state: 'open', retryAfterMs: 10 }) })), { retry: false, reason: 'circuit_open' })
  })

  it('never retries a tool without a safe annotation, or a cancelled call', () => {
    assert.deepEqual(retryDecision(input({ safe: false })), { retry: false, reason: 'unsafe_tool' })
    assert.deepEqual(retryDecision(input({ aborted: true })), { retry: false, reason: 'cancelled' })
  })

  it('stops at maxAttempts; maxAttempts 1 disables retries', () => {
    assert.deepEqual(retryDecision(input({ attempt: 3, maxAttempts: 3 })), { retry: false, reason: 'attempts' })
    assert.deepEqual(retryDecision(input({ attempt: 1, maxAttempts: 1 })), { retry: false, reason: 'attempts' })
  })

  it('doubles the backoff per attempt, with jitter between half and all of it', () => {
    assert.deepEqual(retryDecision(input({ attempt: 2, random: () => 0 })), { retry: true, delayMs: 100 })
    assert.deepEqual(retryDecision(input({ attempt: 2, random: () => 1 })), { retry: true, delayMs: 200 })
  })

  it('does not start an attempt that would have less than MIN_ATTEMPT_MS of the deadline after its backoff', () => {
    assert.deepEqual(retryDecision(input({ remainingMs: 75 + MIN_ATTEMPT_MS })), { retry: true, delayMs: 75 })
    assert.deepEqual(retryDecision(input({ remainingMs: 75 + MIN_ATTEMPT_MS - 1 })), { retry: false, reason: 'deadline' })
  })
})

describe('withRetries', () => {
  const signal = new AbortController().signal

  it('gives each retry what is left of the deadline counted from the first attempt, and reports its outcome', async () => {
    let clock = 0
    const budgets: number[] = []
    const retried: string[] = []
    const result = await withRetries(async (timeoutMs) => {
      budgets.push(timeoutMs)
      clock += 300 // each attempt takes 300 ms of the deadline
      if (budgets.length < 3) throw closed
      return 'ok'
    }, { maxAttempts: 3, backoffMs: 0, safe: true, timeoutMs: 1000, signal, now: () => clock, random: () => 0, onRetried: (o) => { retried.push(o) } })
    assert.equal(result, 'ok')
    assert.deepEqual(budgets, [1000, 700, 400])
    assert.deepEqual(retried, ['failed', 'ok'])
  })

  it('rethrows the first failure as is when it may not be retried', async () => {
    let attempts = 0
    const timeout = new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT')
    await assert.rejects(withRetries(async () => { attempts++; throw timeout }, { maxAttempts: 5, backoffMs: 0, safe: true, timeoutMs: 1000, signal }), (err) => err === timeout)
    assert.equal(attempts, 1)
  })

  it('stops waiting for the backoff when the client cancels', async () => {
    const controller = new AbortController()
    let attempts = 0
    const pending = withRetries(async () => { attempts++; throw unavailable }, {
      maxAttempts: 5, backoffMs: 60_000, safe: true, timeoutMs: 600_000, signal: controller.signal, onRetry: () => { controller.abort() }
    })
    await assert.rejects(pending, (err) => err === unavailable)
    assert.equal(attempts, 1)
  })
})
