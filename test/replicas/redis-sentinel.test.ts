import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { redisOrSkip } from '../helpers/redis-server.ts'
import { SENTINEL_NAME, startSentinelTopology } from '../helpers/redis-sentinel.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'
const ALICE = { authorization: `Bearer ${KEY}` }
const headersOf = (sessionId: string): Record<string, string> => ({ ...ALICE, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })

/** One answer of a tools/call (JSON or one SSE message), as the id and echoed text it carries. */
async function echo (gw: RunningGateway, sessionId: string, id: number, text: string): Promise<{ status: number, id?: unknown, text?: unknown }> {
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__echo', arguments: { text } } }, headersOf(sessionId))
  const body = await res.text()
  if (res.status !== 200) return { status: res.status }
  const json = body.trimStart().startsWith('{') ? body : body.split('\n').filter(l => l.startsWith('data: ')).map(l => l.slice(6)).find(l => l.includes('"result"')) ?? '{}'
  const message = JSON.parse(json) as { id?: unknown, result?: { structuredContent?: { text?: unknown } } }
  return { status: res.status, id: message.id, text: message.result?.structuredContent?.text }
}

async function keysOn (port: number, t: TestContext, pattern: string): Promise<string[]> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 })
  client.on('error', () => {})
  t.after(() => { client.disconnect() })
  await client.connect()
  const keys = await client.keys(pattern)
  client.disconnect()
  return keys
}

test('Sentinel: the primary SIGKILLed mid-load; calls of known sessions go on with no answer crossed, a session opened after the failover works, pins and sessions are on the new primary', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const topology = await startSentinelTopology(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const prefix = `sent${Date.now()}`
  const config = {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    redis: { sentinels: topology.sentinels, name: SENTINEL_NAME, keyPrefix: prefix },
    sessions: { store: 'redis' },
    rateLimits: { store: 'redis', keyPrefix: `${prefix}:rl`, rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit: 100_000, windowMs: 60_000 }] },
    pinning: { store: 'redis', keyPrefix: `${prefix}:pins` }
  }
  const gw = await startGateway(t, JSON.stringify(config))
  await waitReady(gw)
  const sessions: string[] = []
  for (let i = 0; i < 3; i++) sessions.push((await rawInitialize(gw.url, '2025-11-25', ALICE)).sessionId)
  for (const [i, id] of sessions.entries()) assert.deepEqual(await echo(gw, id, 1, `warm-${i}`), { status: 200, id: 1, text: `warm-${i}` })
  await waitFor(async () => (await keysOn(topology.primary.port, t, `${prefix}:pins*`)).length > 0, 'the pins written to the primary')

  // Load: each session calls in a loop, every answer checked against its own request.
  const load = { stop: false }
  const answers: string[] = []
  const loops = sessions.map(async (id, s) => {
    for (let n = 2; !load.stop; n++) {
      const text = `s${s}-n${n}`
      const got = await echo(gw, id, n, text)
      answers.push(got.status === 200 && got.id === n && got.text === text ? 'ok' : `${text}: ${JSON.stringify(got)}`)
    }
  })
  await waitFor(() => answers.length >= 30, 'some calls before the kill')
  const killedAt = Date.now()
  await topology.primary.kill()
  // Opened while no primary answers: served from this replica, its write counted as a store error.
  const opened = (await rawInitialize(gw.url, '2025-11-25', ALICE)).sessionId
  await waitFor(async () => await topology.primaryPort() === topology.replica.port, 'the sentinels to promote the replica', 30_000)
  const promotedMs = Date.now() - killedAt
  // A session opened after the failover is written to, and read back from, the new primary.
  // Each try that is not stored there yet is ended, so a slow switch (a loaded CI machine) never
  // runs into limits.sessionsPerPrincipal.
  const fresh = await waitFor(async () => {
    const { sessionId } = await rawInitialize(gw.url, '2025-11-25', ALICE)
    await new Promise(resolve => setTimeout(resolve, 300))
    if ((await keysOn(topology.replica.port, t, `*${sessionId}*`)).length > 0) return sessionId
    await fetch(gw.url, { method: 'DELETE', headers: headersOf(sessionId) })
    return undefined
  }, 'a new session stored on the new primary', 60_000)
  const servedMs = Date.now() - killedAt
  const during = answers.length
  await waitFor(() => answers.length >= during + 30, 'calls after the failover')
  load.stop = true
  await Promise.all(loops)
  t.diagnostic(`failover: replica promoted ${promotedMs} ms after the SIGKILL, new sessions stored there after ${servedMs} ms; ${answers.length} calls`)

  assert.deepEqual(answers.filter(a => a !== 'ok'), [], 'every call of a known session answered, each with its own answer')
  assert.deepEqual(await echo(gw, fresh, 7, 'fresh'), { status: 200, id: 7, text: 'fresh' })
  for (const [i, id] of sessions.entries()) assert.deepEqual(await echo(gw, id, 99, `after-${i}`), { status: 200, id: 99, text: `after-${i}` })
  // Pins were replicated before the kill: the new primary holds them.
  assert.ok((await keysOn(topology.replica.port, t, `${prefix}:pins*`)).length > 0, 'pins on the new primary')
  assert.deepEqual(await echo(gw, opened, 8, 'opened'), { status: 200, id: 8, text: 'opened' })
  const metrics = await scrapeMetrics(gw.baseUrl)
  t.diagnostic(metrics.split('\n').filter(l => l.startsWith('switchboard_session_store_errors_total')).join('; '))
  assert.ok((metricValue(metrics, 'switchboard_session_store_errors_total', { op: 'save' }) ?? 0) >= 1, 'the failed write of the session opened meanwhile is counted')
})
