import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { concurrencySchema, rateLimitsSchema } from '../../../../src/config/access-schema.ts'
import { CallCancelledError } from '../../../../src/errors.ts'
import { concurrencyStep } from '../../../../src/gateway/call-chain/concurrency.ts'
import { rateLimitStep } from '../../../../src/gateway/call-chain/rate-limit.ts'
import { createMetrics } from '../../../../src/observability/metrics.ts'
import { ConcurrencyLimiter } from '../../../../src/policy/concurrency-limiter.ts'
import { createRateLimiter } from '../../../../src/policy/rate-limiter.ts'
import { CallSignal } from '../../../../src/protocol/cancel-signal.ts'
import { OK, contextOf, entryOf, recordingNext, resolvedCall, viewDenying } from './call-fixtures.ts'

function errorOf (result: Record<string, unknown>): unknown {
  return (result._meta as Record<string, unknown>)['switchboard/error']
}

describe('rate-limit step', () => {
  it('lets calls within the limit through and answers the next one with when to retry, without running it', async (t) => {
    const metrics = createMetrics()
    const limiter = createRateLimiter(rateLimitsSchema.parse({ rules: [{ key: 'principal', limit: 2, windowMs: 60_000 }] }), { log: pino({ level: 'silent' }), metrics })
    t.after(() => limiter.close())
    const step = rateLimitStep(limiter, metrics)
    const { next, seen } = recordingNext()
    for (let i = 0; i < 2; i++) assert.equal(await step(resolvedCall(entryOf('web__echo')), next), OK)
    const refused = resolvedCall(entryOf('web__echo'))
    const result = await step(refused, next)
    assert.equal(seen.length, 2)
    assert.equal(refused.outcome, 'rate_limited')
    assert.equal(result.isError, true)
    assert.deepEqual(errorOf(result), { code: 'SB_ERR_RATE_LIMITED', key: 'principal', limit: 2, windowMs: 60_000, retryAfterMs: (errorOf(result) as { retryAfterMs: number }).retryAfterMs })
    assert.match(await metrics.registry.metrics(), /switchboard_rate_limit_rejections_total\{upstream="web",tool="web__echo",key="principal"\} 1/)
  })
})

describe('concurrency step', () => {
  it('passes a call to an upstream without a cap straight on', async () => {
    const { next, seen } = recordingNext()
    assert.equal(await concurrencyStep(new Map(), createMetrics())(resolvedCall(entryOf('web__echo')), next), OK)
    assert.equal(seen.length, 1)
  })

  it('holds a slot while the upstream works and gives it back however the call ends', async () => {
    const slots = new ConcurrencyLimiter(concurrencySchema.parse({ limit: 1, maxWaitMs: 0 }))
    const step = concurrencyStep(new Map([['web', slots]]), createMetrics())
    let runningDuring = -1
    await step(resolvedCall(entryOf('web__echo')), async () => { runningDuring = slots.running; return OK })
    assert.equal(runningDuring, 1)
    assert.equal(slots.running, 0)
    await assert.rejects(step(resolvedCall(entryOf('web__echo')), recordingNext(new Error('upstream failed')).next), /upstream failed/)
    assert.equal(slots.running, 0)
  })

  it('answers busy, without running the call, when no slot frees in time', async () => {
    const slots = new ConcurrencyLimiter(concurrencySchema.parse({ limit: 1, maxWaitMs: 0 }))
    const release = await slots.acquire()
    assert.notEqual(release, 'busy')
    const { next, seen } = recordingNext()
    const call = resolvedCall(entryOf('web__echo'))
    const result = await concurrencyStep(new Map([['web', slots]]), createMetrics())(call, next)
    assert.deepEqual([seen.length, call.outcome, errorOf(result)], [0, 'busy', { code: 'SB_ERR_UPSTREAM_BUSY', upstream: 'web' }])
  })

  it('is cancelled, not busy, when the client cancels while the call waits for a slot', async (t) => {
    const slots = new ConcurrencyLimiter(concurrencySchema.parse({ limit: 1, maxWaitMs: 60_000 }))
    const release = await slots.acquire()
    t.after(() => { if (release !== 'busy') release() })
    const signal = new CallSignal()
    const call = resolvedCall(entryOf('web__echo'), {}, contextOf(viewDenying(), {}, signal))
    const { next, seen } = recordingNext()
    const pending = concurrencyStep(new Map([['web', slots]]), createMetrics())(call, next)
    signal.abort(new Error('client cancelled'))
    await assert.rejects(pending, (err: unknown) => err instanceof CallCancelledError)
    assert.equal(seen.length, 0)
    assert.equal(call.outcome, 'ok', 'the failure step decides the outcome of a cancelled call')
  })
})
