/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'
const REDIS_PASSWORD = 'redis-secret-4f9a1c'
// A call must come back even with Redis gone; far above the configured redisTimeoutMs, far below a hang.
const ANSWER_BOUND_MS = 5000

interface ToolResult { isError?: boolean, _meta?: Record<string, unknown> }

async function replica (t: TestContext, upstreamUrl: string, redisUrl: string, limit: number): Promise<{ gw: RunningGateway, client: Client }> {
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstreamUrl }],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }] },
    rateLimits: {
      store: 'redis',
      redisUrl: '${REDIS_URL}',
      redisTimeoutMs: 200,
      rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit, windowMs: 60_000 }]
    }
  }), { ...process.env, ALICE_KEY: KEY, REDIS_URL: redisUrl })
  await waitReady(gw)
  const client = await connectClient(t, gw.url, {}, { authorization: `Bearer ${KEY}` })
  return { gw, client }
}

async function refused (client: Client): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => { reject(new Error(`no answer within ${ANSWER_BOUND_MS} ms`)) }, ANSWER_BOUND_MS) })
  try {
    const result = await Promise.race([client.callTool({ name: 'web__whoami', arguments: {} }), bound]) as ToolResult
    if (result.isError === true) assert.equal((result._meta?.['switchboard/error'] as { code: string }).code, 'SB_ERR_RATE_LIMITED')
    return result.isError === true
  } finally {
    clearTimeout(timer)
  }
}

async function gauge (gw: RunningGateway, name: string): Promise<number | undefined> {
  return metricValue(await scrapeMetrics(gw.baseUrl), name)
}

test('two gateways on one Redis enforce one budget; with Redis killed they keep answering from memory, and use Redis again when it returns', async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t, { password: REDIS_PASSWORD })
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const a = await replica(t, web.url, redis.url, 4)
  const b = await replica(t, web.url, redis.url, 4)

  // One budget of 4 across both replicas: a, b, a, b pass; the fifth is refused on either.
  const shared = []
  for (const { client } of [a, b, a, b, a, b]) shared.push(await refused(client))
  assert.deepEqual(shared, [false, false, false, false, true, true])

  await redis.kill()
  // Each replica now limits in memory, on its own fresh budget of 4: calls are answered, not hung.
  const during = []
  for (let i = 0; i < 5; i++) during.push(await refused(a.client))
  assert.deepEqual(during, [false, false, false, false, true])
  assert.equal(await refused(b.client), false)
  for (const { gw } of [a, b]) {
    assert.ok(((await gauge(gw, 'switchboard_rate_limit_store_errors_total')) ?? 0) >= 1, 'store errors counted')
    assert.equal(await gauge(gw, 'switchboard_rate_limit_store_fallback'), 1)
    const warnings = gw.logs.filter(l => l.component === 'rate-limit' && l.level === 40)
    assert.equal(warnings.length, 1, `one warning per outage episode: ${JSON.stringify(warnings)}`)
  }

  await redis.restart()
  // The next probe finds Redis again; the restarted Redis kept nothing, so the shared budget starts over.
  await waitFor(async () => {
    await refused(a.client)
    return (await gauge(a.gw, 'switchboard_rate_limit_store_fallback')) === 0
  }, 'replica a back on Redis')
  await waitFor(async () => {
    await refused(b.client)
    return (await gauge(b.gw, 'switchboard_rate_limit_store_fallback')) === 0
  }, 'replica b back on Redis')
  const after = []
  for (let i = 0; i < 6; i++) after.push(await refused((i % 2 === 0 ? a : b).client))
  assert.ok(after.includes(true), `the shared budget of 4 is enforced again: ${JSON.stringify(after)}`)
  assert.ok(after.filter(r => !r).length <= 4, `at most 4 passed across both replicas: ${JSON.stringify(after)}`)
  for (const { gw } of [a, b]) {
    assert.equal(gw.logs.filter(l => l.component === 'rate-limit' && /recovered/.test(l.msg)).length, 1)
    const text = JSON.stringify(gw.logs) + await scrapeMetrics(gw.baseUrl)
    assert.ok(!text.includes(REDIS_PASSWORD), 'the Redis password appears in no log line or metric')
    assert.ok(!text.includes(KEY), 'the API key appears in no log line or metric')
  }
})
