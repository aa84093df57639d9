/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
const ENV = { ...process.env, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob }

interface ToolResult { content: Array<{ type: string, text?: string }>, isError?: boolean, _meta?: Record<string, unknown> }

async function gateway (t: TestContext, extra: Record<string, unknown>, upstreamExtra: Record<string, unknown> = {}): Promise<RunningGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url, ...upstreamExtra }],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}', roles: ['dev'] }, { id: 'bob', key: '${BOB_KEY}', roles: ['ops'] }] },
    ...extra
  }), ENV)
  await waitReady(gw)
  return gw
}

async function as (t: TestContext, gw: RunningGateway, who: keyof typeof KEYS): Promise<Client> {
  return await connectClient(t, gw.url, {}, { authorization: `Bearer ${KEYS[who]}` })
}

async function call (client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return await client.callTool({ name, arguments: args }) as ToolResult
}

test('the call over the limit gets an isError result that says when to retry, with the milliseconds in _meta', async (t) => {
  const gw = await gateway(t, { rateLimits: { rules: [{ principals: ['*'], tools: ['web__echo'], key: 'principal+tool', limit: 2, windowMs: 60_000 }] } })
  const alice = await as(t, gw, 'alice')
  const bob = await as(t, gw, 'bob')
  for (let i = 0; i < 2; i++) assert.notEqual((await call(alice, 'web__echo', { text: 'x' })).isError, true)
  const refused = await call(alice, 'web__echo', { text: 'x' })
  assert.equal(refused.isError, true)
  const text = refused.content[0]?.text ?? ''
  assert.match(text, /rate limit reached for tool "web__echo": at most 2 call\(s\) per 60 s per caller for this tool\. Retry in \d+ s/)
  const retryAfterMs = refused._meta?.['switchboard/retryAfterMs']
  assert.equal(typeof retryAfterMs, 'number')
  assert.ok((retryAfterMs as number) > 0 && (retryAfterMs as number) <= 60_000, String(retryAfterMs))
  assert.deepEqual(refused._meta?.['switchboard/error'], { code: 'SB_ERR_RATE_LIMITED', key: 'principal+tool', limit: 2, windowMs: 60_000, retryAfterMs })
  // Another tool and another principal have budgets of their own.
  assert.notEqual((await call(alice, 'web__add', { a: 1, b: 2 })).isError, true)
  assert.notEqual((await call(bob, 'web__echo', { text: 'x' })).isError, true)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_rate_limit_rejections_total', { upstream: 'web', tool: 'web__echo', key: 'principal+tool' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: 'web', tool: 'web__echo', outcome: 'rate_limited' }), 1)
  const audit = gw.logs.filter(l => l.component === 'audit' && l.tool === 'web__echo')
  assert.deepEqual(audit.map(l => [l.principal, l.outcome]), [['alice', 'ok'], ['alice', 'ok'], ['alice', 'rate_limited'], ['bob', 'ok']])
})

test('every matching rule must pass: a per-upstream limit caps all principals together', async (t) => {
  const gw = await gateway(t, {
    rateLimits: {
      rules: [
        { principals: ['role:dev'], tools: ['*'], key: 'principal', limit: 100, windowMs: 60_000 },
        { principals: ['*'], tools: ['web__*'], key: 'upstream', limit: 3, windowMs: 60_000 }
      ]
    }
  })
  const alice = await as(t, gw, 'alice')
  const bob = await as(t, gw, 'bob')
  const outcomes = []
  for (const client of [alice, bob, alice, bob]) outcomes.push((await call(client, 'web__whoami')).isError === true)
  assert.deepEqual(outcomes, [false, false, false, true])
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_rate_limit_rejections_total', { key: 'upstream' }), 1)
})

test('a concurrency cap makes extra calls wait for a slot, and refuses them once the bounded wait is over', async (t) => {
  const gw = await gateway(t, {}, { concurrency: { limit: 1, maxWaitMs: 300, maxQueued: 5 } })
  const alice = await as(t, gw, 'alice')
  const long = call(alice, 'web__slow', { ms: 2000 })
  await waitFor(async () => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_upstream_calls_in_flight', { upstream: 'web' }) === 1, 'the slow call holding the slot')
  const refused = await call(alice, 'web__echo', { text: 'x' })
  assert.equal(refused.isError, true)
  assert.match(refused.content[0]?.text ?? '', /upstream "web" is already running as many calls as it may/)
  assert.equal((refused._meta?.['switchboard/error'] as { code: string }).code, 'SB_ERR_UPSTREAM_BUSY')
  assert.notEqual((await long).isError, true)
  assert.notEqual((await call(alice, 'web__echo', { text: 'x' })).isError, true, 'the slot is free again')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_rate_limit_rejections_total', { upstream: 'web', key: 'concurrency' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_upstream_calls_in_flight', { upstream: 'web' }), 0)
})

test('a call waiting for a slot runs as soon as one frees up', async (t) => {
  const gw = await gateway(t, {}, { concurrency: { limit: 1, maxWaitMs: 10_000, maxQueued: 5 } })
  const alice = await as(t, gw, 'alice')
  const first = call(alice, 'web__slow', { ms: 1000 })
  await waitFor(async () => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_upstream_calls_in_flight', { upstream: 'web' }) === 1, 'the slow call holding the slot')
  const second = await call(alice, 'web__echo', { text: 'queued' })
  assert.notEqual(second.isError, true)
  assert.notEqual((await first).isError, true)
})
