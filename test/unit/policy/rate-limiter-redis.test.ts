import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Principal } from '../../../src/auth/principal.ts'
import { rateLimitsSchema } from '../../../src/config/access-schema.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { createMetrics } from '../../../src/observability/metrics.ts'
import type { Metrics } from '../../../src/observability/metrics.ts'
import { createRateLimiter } from '../../../src/policy/rate-limiter.ts'
import type { RateDecision, RateLimiter } from '../../../src/policy/rate-limiter.ts'
import { redisOrSkip, startRedisServer } from '../../helpers/redis-server.ts'
import { waitFor } from '../../helpers/start-gateway.ts'
import type { LogLine } from '../../helpers/start-gateway.ts'

const REDIS_TIMEOUT_MS = 200
/** A bound, not a timing: a check must never hang on a dead or stuck Redis. */
const CHECK_BOUND_MS = 2000
const WARN = 'rate-limit store failed; limiting in memory until it recovers'
const RECOVERED = 'rate-limit store recovered'
const CONNECTION_ERROR = 'rate-limit store connection error'

interface Replica { limiter: RateLimiter, metrics: Metrics, logs: LogLine[] }

/** `timeoutMs`: a loaded machine may take longer than REDIS_TIMEOUT_MS to connect; tests that are not about timeouts give it room. */
function replica (t: TestContext, redisUrl: string, rules: unknown[], timeoutMs = REDIS_TIMEOUT_MS): Replica {
  const logs: LogLine[] = []
  const log = createLogger('debug', { write (line: string) { logs.push(JSON.parse(line) as LogLine) } })
  const metrics = createMetrics()
  const config = rateLimitsSchema.parse({ store: 'redis', redisUrl, redisTimeoutMs: timeoutMs, keyPrefix: 'sbtest', rules })
  const limiter = createRateLimiter(config, { log, metrics })
  t.after(() => limiter.close())
  return { limiter, metrics, logs }
}

const who = (id: string): Principal => ({ id, roles: [], via: 'api-key' })

async function check (r: Replica, id: string): Promise<RateDecision> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`check took over ${CHECK_BOUND_MS} ms`)) }, CHECK_BOUND_MS) })
  try {
    return await Promise.race([r.limiter.check({ principal: who(id), tool: 'fs__read', upstream: 'fs' }), bound])
  } finally {
    clearTimeout(timer)
  }
}

async function allowedOf (r: Replica, id: string, n: number): Promise<number> {
  let allowed = 0
  for (let i = 0; i < n; i++) if ((await check(r, id)).allowed) allowed++
  return allowed
}

async function metricValue (metrics: Metrics, name: string): Promise<number> {
  const metric = await metrics.registry.getSingleMetric(name)?.get()
  return metric?.values.reduce((sum, v) => sum + v.value, 0) ?? Number.NaN
}
const storeErrors = async (r: Replica): Promise<number> => await metricValue(r.metrics, 'switchboard_rate_limit_store_errors_total')
const fallback = async (r: Replica): Promise<number> => await metricValue(r.metrics, 'switchboard_rate_limit_store_fallback')
const linesWith = (r: Replica, msg: string): LogLine[] => r.logs.filter(l => l.msg === msg)

/** Checks on throwaway principals until the replica logs that Redis is back (bounded). */
async function untilRecovered (r: Replica, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (let i = 0; linesWith(r, RECOVERED).length === 0; i++) {
    if (Date.now() > deadline) throw new Error('the limiter did not go back to Redis')
    await check(r, `probe-${i}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

function assertNoSecrets (replicas: Replica[], secrets: string[]): void {
  for (const r of replicas) {
    for (const line of r.logs) {
      const text = JSON.stringify(line)
      for (const secret of secrets) assert.ok(!text.includes(secret), `a log line leaks ${secret}: ${text}`)
    }
  }
}

const PER_PRINCIPAL_3 = [{ key: 'principal', limit: 3, windowMs: 60_000 }]

describe('rate limiter (redis store)', () => {
  it('enforces one budget across two replicas sharing a Redis', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const a = replica(t, redis.url, PER_PRINCIPAL_3, 1500)
    const b = replica(t, redis.url, PER_PRINCIPAL_3, 1500)
    assert.equal(a.limiter.store, 'redis')
    assert.equal(await allowedOf(a, 'alice', 2), 2)
    assert.equal(await allowedOf(b, 'alice', 1), 1)
    const refused = await check(b, 'alice')
    assert.equal(refused.allowed, false)
    if (!refused.allowed) assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= 60_000)
    assert.equal(await allowedOf(a, 'alice', 2), 0)
    assert.equal(await allowedOf(b, 'bob', 3), 3, 'another principal has its own budget')
    assert.equal(await storeErrors(a) + await storeErrors(b), 0)
  })

  it('limits in memory while Redis is dead, logs the outage once, and shares the budget again after a restart', async (t) => {
    if (!redisOrSkip(t)) return
    const password = `pw-${randomBytes(8).toString('hex')}`
    const redis = await startRedisServer(t, { password })
    const a = replica(t, redis.url, PER_PRINCIPAL_3)
    const b = replica(t, redis.url, PER_PRINCIPAL_3)
    assert.equal(await allowedOf(a, 'warm-up', 1), 1)
    assert.equal(await fallback(a), 0)

    await redis.kill()
    // Every check still resolves; each replica counts on its own, as the memory twin allows.
    assert.equal(await allowedOf(a, 'carol', 5), 3)
    assert.equal(await allowedOf(b, 'carol', 5), 3)
    assert.equal(await allowedOf(a, 'dave', 10), 3)
    for (const r of [a, b]) {
      assert.ok(await storeErrors(r) > 0)
      assert.equal(await fallback(r), 1)
      assert.equal(linesWith(r, WARN).length, 1, 'one warn line per outage')
      assert.equal(linesWith(r, WARN)[0]?.level, 40)
    }

    await redis.restart()
    await untilRecovered(a)
    await untilRecovered(b)
    for (const r of [a, b]) {
      assert.equal(await fallback(r), 0)
      assert.equal(linesWith(r, RECOVERED).length, 1)
      assert.equal(linesWith(r, WARN).length, 1, 'no second warn line for the same outage')
    }
    assert.equal(await allowedOf(a, 'erin', 2), 2)
    assert.equal(await allowedOf(b, 'erin', 3), 1, 'one budget again across replicas')
    assertNoSecrets([a, b], [password, redis.url])
  })

  it('answers from memory within about redisTimeoutMs when Redis stops answering, and tries it at most once a second', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    t.after(() => { redis.resume() })
    const a = replica(t, redis.url, PER_PRINCIPAL_3)
    assert.equal(await allowedOf(a, 'warm-up', 1), 1)

    redis.pause()
    assert.equal((await check(a, 'frank')).allowed, true)
    assert.equal(await storeErrors(a), 1)
    assert.equal(await fallback(a), 1)
    // Until the next probe nothing waits for Redis: these are answered from memory at once.
    const started = performance.now()
    assert.equal(await allowedOf(a, 'frank', 20), 2)
    assert.ok(performance.now() - started < REDIS_TIMEOUT_MS, 'calls between probes must not wait for Redis')
    assert.equal(await storeErrors(a), 1)

    redis.resume()
    await untilRecovered(a)
    assert.equal(await fallback(a), 0)
    assert.equal(linesWith(a, WARN).length, 1)
  })

  it('falls back to memory when Redis refuses the password, without ever logging it', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t, { password: `right-${randomBytes(8).toString('hex')}` })
    const wrong = `wrong-${randomBytes(8).toString('hex')}`
    const url = `redis://:${wrong}@127.0.0.1:${redis.port}`
    const a = replica(t, url, [{ key: 'global', limit: 1, windowMs: 60_000 }])
    assert.equal(await allowedOf(a, 'grace', 3), 1)
    assert.ok(await storeErrors(a) > 0)
    assert.equal(linesWith(a, WARN).length, 1)
    // The client reports each failed connection attempt: look at every line once it has reported one
    // made after the fall-back to memory.
    await waitFor(() => a.logs.findLastIndex(l => l.msg === CONNECTION_ERROR) > a.logs.findIndex(l => l.msg === WARN), 'a failed reconnect reported after the fall-back')
    assertNoSecrets([a], [wrong, url])
  })
})
