import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import type { Principal } from '../../../src/auth/principal.ts'
import { rateLimitsSchema } from '../../../src/config/access-schema.ts'
import { createMetrics } from '../../../src/observability/metrics.ts'
import { createRateLimiter, matchingRateRules } from '../../../src/policy/rate-limiter.ts'
import type { CallKey, RateDecision, RateLimiter } from '../../../src/policy/rate-limiter.ts'

const alice: Principal = { id: 'alice', roles: ['admin'], via: 'api-key' }
const bob: Principal = { id: 'bob', roles: ['reader'], via: 'api-key' }
const bobJwt: Principal = { id: 'bob', roles: ['reader'], via: 'jwt' }

function limiterFor (t: TestContext, rules: unknown[]): RateLimiter {
  const limiter = createRateLimiter(rateLimitsSchema.parse({ rules }), { log: pino({ level: 'silent' }), metrics: createMetrics() })
  t.after(() => limiter.close())
  return limiter
}

const call = (principal: Principal, tool = 'fs__read', upstream = 'fs'): CallKey => ({ principal, tool, upstream })

/** Checks `n` times and returns how many were allowed. */
async function allowedOf (limiter: RateLimiter, c: CallKey, n: number): Promise<number> {
  let allowed = 0
  for (let i = 0; i < n; i++) if ((await limiter.check(c)).allowed) allowed++
  return allowed
}

function assertRefused (decision: RateDecision, ruleIndex: number, windowMs: number): void {
  assert.equal(decision.allowed, false)
  if (decision.allowed) return
  assert.equal(decision.ruleIndex, ruleIndex)
  assert.ok(decision.retryAfterMs > 0 && decision.retryAfterMs <= windowMs, `retryAfterMs ${decision.retryAfterMs}`)
}

describe('rate limiter (memory store)', () => {
  it('allows `limit` calls in a window, then refuses with a retry time within the window', async (t) => {
    const limiter = limiterFor(t, [{ key: 'principal', limit: 3, windowMs: 60_000 }])
    assert.equal(limiter.store, 'memory')
    assert.equal(limiter.active, true)
    assert.equal(await allowedOf(limiter, call(alice), 3), 3)
    const decision = await limiter.check(call(alice))
    assertRefused(decision, 0, 60_000)
    if (!decision.allowed) assert.equal(decision.rule.limit, 3)
  })

  it('gives each principal its own budget with key principal (the same id via another method counts apart)', async (t) => {
    const limiter = limiterFor(t, [{ key: 'principal', limit: 2, windowMs: 60_000 }])
    assert.equal(await allowedOf(limiter, call(alice, 'a'), 1), 1)
    assert.equal(await allowedOf(limiter, call(alice, 'b'), 5), 1)
    assert.equal(await allowedOf(limiter, call(bob), 5), 2)
    assert.equal(await allowedOf(limiter, call(bobJwt), 5), 2)
  })

  it('gives each tool its own budget, shared by every principal, with key tool', async (t) => {
    const limiter = limiterFor(t, [{ key: 'tool', limit: 2, windowMs: 60_000 }])
    assert.equal(await allowedOf(limiter, call(alice, 'fs__read'), 1), 1)
    assert.equal(await allowedOf(limiter, call(bob, 'fs__read'), 5), 1)
    assert.equal(await allowedOf(limiter, call(bob, 'fs__write'), 5), 2)
  })

  it('gives each principal and tool pair its own budget with key principal+tool', async (t) => {
    const limiter = limiterFor(t, [{ key: 'principal+tool', limit: 1, windowMs: 60_000 }])
    assert.equal(await allowedOf(limiter, call(alice, 'fs__read'), 3), 1)
    assert.equal(await allowedOf(limiter, call(alice, 'fs__write'), 3), 1)
    assert.equal(await allowedOf(limiter, call(bob, 'fs__read'), 3), 1)
  })

  it('shares one budget per upstream across tools and principals with key upstream', async (t) => {
    const limiter = limiterFor(t, [{ key: 'upstream', limit: 3, windowMs: 60_000 }])
    assert.equal(await allowedOf(limiter, call(alice, 'fs__read', 'fs'), 2), 2)
    assert.equal(await allowedOf(limiter, call(bob, 'fs__write', 'fs'), 5), 1)
    assert.equal(await allowedOf(limiter, call(bob, 'git__log', 'git'), 5), 3)
  })

  it('shares one budget between every call with key global', async (t) => {
    const limiter = limiterFor(t, [{ key: 'global', limit: 3, windowMs: 60_000 }])
    assert.equal(await allowedOf(limiter, call(alice, 'fs__read', 'fs'), 2), 2)
    assert.equal(await allowedOf(limiter, call(bob, 'git__log', 'git'), 5), 1)
  })

  it('applies a rule only to principals with a matching role and tools matching its globs', async (t) => {
    const limiter = limiterFor(t, [{ principals: ['role:read*'], tools: ['fs__*'], key: 'principal', limit: 1, windowMs: 60_000 }])
    assert.equal(await allowedOf(limiter, call(bob, 'fs__read'), 3), 1)
    assert.equal(await allowedOf(limiter, call(bob, 'git__log'), 3), 3, 'tool outside the globs')
    assert.equal(await allowedOf(limiter, call(alice, 'fs__read'), 3), 3, 'principal without the role')
  })

  it('refuses when any matching rule refuses and gives the point back to the rules that allowed', async (t) => {
    const limiter = limiterFor(t, [
      { key: 'principal', limit: 3, windowMs: 60_000 },
      { tools: ['fs__write'], key: 'tool', limit: 1, windowMs: 10_000 }
    ])
    assert.equal(await allowedOf(limiter, call(alice, 'fs__write'), 1), 1)
    // Refused by rule 1; rule 0's point is returned each time, so alice still has 2 calls left.
    for (let i = 0; i < 5; i++) assertRefused(await limiter.check(call(alice, 'fs__write')), 1, 10_000)
    await new Promise(resolve => setImmediate(resolve))
    assert.equal(await allowedOf(limiter, call(alice, 'fs__read'), 5), 2)
  })

  it('reports the refusing rule with the longest wait when several refuse', async (t) => {
    const limiter = limiterFor(t, [
      { key: 'tool', limit: 1, windowMs: 5_000 },
      { key: 'principal', limit: 1, windowMs: 60_000 }
    ])
    assert.equal(await allowedOf(limiter, call(alice), 1), 1)
    const decision = await limiter.check(call(alice))
    assertRefused(decision, 1, 60_000)
    if (!decision.allowed) assert.ok(decision.retryAfterMs > 5_000)
  })

  it('allows everything and reports itself inactive without rules; calls no rule matches are allowed', async (t) => {
    const none = limiterFor(t, [])
    assert.equal(none.active, false)
    assert.equal(await allowedOf(none, call(alice), 10), 10)
    const some = limiterFor(t, [{ principals: ['carol'], key: 'global', limit: 1, windowMs: 1000 }])
    assert.equal(await allowedOf(some, call(alice), 10), 10)
  })

  it('keeps identical rules apart, so each counts a call once', async (t) => {
    const rule = { key: 'global', limit: 2, windowMs: 60_000 }
    const limiter = limiterFor(t, [rule, rule])
    assert.equal(await allowedOf(limiter, call(alice), 5), 2)
  })

  it('matchingRateRules lists the rules that apply to a principal and tool, in config order', () => {
    const config = rateLimitsSchema.parse({
      rules: [
        { key: 'global', limit: 100, windowMs: 1000 },
        { principals: ['role:admin'], key: 'principal', limit: 5, windowMs: 1000 },
        { principals: ['bob'], tools: ['git__*'], key: 'principal+tool', limit: 1, windowMs: 1000 }
      ]
    })
    const indexes = (p: Principal, tool: string): number[] => matchingRateRules(config, p, tool).map(m => m.index)
    assert.deepEqual(indexes(alice, 'fs__read'), [0, 1])
    assert.deepEqual(indexes(bob, 'fs__read'), [0])
    assert.deepEqual(indexes(bob, 'git__log'), [0, 2])
    assert.equal(matchingRateRules(config, bob, 'git__log')[1]?.rule, config.rules[2])
  })
})
