import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Client, LoggingMessageNotification } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { startFaultProxy, type FaultRule } from '../helpers/fault-proxy.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, { code?: string, status?: number }> }

async function gatewayBehindProxy (t: TestContext, rule: FaultRule, upstream: Record<string, unknown> = {}): Promise<{ gw: RunningGateway, proxy: Awaited<ReturnType<typeof startFaultProxy>> }> {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const proxy = await startFaultProxy(http.url, rule)
  t.after(() => proxy.close())
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'web', transport: 'streamable-http', url: proxy.url, ...upstream }] }))
  await waitReady(gw)
  assert.equal(gw.gateway.pool.get('web')?.state, 'ready')
  return { gw, proxy }
}

const never: FaultRule = () => undefined

test('a timed-out call to an HTTP upstream closes its request, so a hung call holds no socket', { timeout: 30_000 }, async (t) => {
  const { gw, proxy } = await gatewayBehindProxy(t, never, { tools: { timeoutMs: { stall: 300 } } })
  const client = await connectClient(t, gw.url)
  const results = await Promise.all([1, 2, 3].map(async () => await client.callTool({ name: 'web__stall', arguments: {} }) as ToolResult))
  for (const result of results) {
    assert.equal(result.isError, true)
    assert.equal(result._meta?.['switchboard/error']?.code, 'SB_ERR_UPSTREAM_TIMEOUT')
  }
  await waitFor(() => proxy.openRequests === 0, 'every timed-out request to be closed at the upstream', 5_000)
  assert.equal(gw.gateway.pool.get('web')?.state, 'ready')
})

test('a call the client cancels closes its request to the HTTP upstream', { timeout: 30_000 }, async (t) => {
  const { gw, proxy } = await gatewayBehindProxy(t, never)
  const client = await connectClient(t, gw.url)
  const controller = new AbortController()
  const pending = client.callTool({ name: 'web__stall', arguments: {} }, { signal: controller.signal })
  await waitFor(() => proxy.openRequests === 1, 'the call to reach the upstream')
  controller.abort()
  await assert.rejects(pending)
  await waitFor(() => proxy.openRequests === 0, 'the cancelled request to be closed at the upstream', 5_000)
})

test('an HTTP 500 fails only the call it answered: the call in flight beside it succeeds and the upstream stays up', { timeout: 30_000 }, async (t) => {
  const { gw, proxy } = await gatewayBehindProxy(t, (body) => body.includes('"fail-me"') ? { status: 500 } : undefined)
  const client = await connectClient(t, gw.url)
  const slow = client.callTool({ name: 'web__slow', arguments: { ms: 600, steps: 2 } }) as Promise<ToolResult>
  await waitFor(() => proxy.openRequests === 1, 'the slow call to be in flight')
  const failed = await client.callTool({ name: 'web__echo', arguments: { text: 'fail-me' } }) as ToolResult
  assert.equal(failed.isError, true)
  assert.equal(failed._meta?.['switchboard/error']?.code, 'SB_ERR_UPSTREAM_HTTP')
  assert.equal(failed._meta?.['switchboard/error']?.status, 500)
  assert.match(failed.content[0]?.text ?? '', /answered HTTP 500/)
  assert.equal((await slow).content[0]?.text, 'done', 'the other call in flight was not failed')
  assert.equal(proxy.injected, 1)
  assert.equal(gw.gateway.pool.get('web')?.state, 'ready', 'one error status does not take the upstream down')
  assert.ok((await client.listTools()).tools.some(tool => tool.name === 'web__echo'), 'its tools stay listed')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_reconnects_total', { upstream: 'web' }), 0)
  assert.equal(metricValue(metrics, 'switchboard_upstream_up', { upstream: 'web' }), 1)
})

test('an answer that drips in byte by byte arrives whole', { timeout: 30_000 }, async (t) => {
  const { gw } = await gatewayBehindProxy(t, (body) => body.includes('"drip-me"') ? { dripMs: 1 } : undefined)
  const client = await connectClient(t, gw.url)
  const result = await client.callTool({ name: 'web__echo', arguments: { text: 'drip-me' } }) as ToolResult
  assert.equal(result.content[0]?.text, 'drip-me')
})

function logsOf (client: Client): Array<LoggingMessageNotification['params']> {
  const seen: Array<LoggingMessageNotification['params']> = []
  client.setNotificationHandler('notifications/message', (n) => { seen.push(n.params) })
  return seen
}

test('with calls of two sessions in flight on one shared HTTP upstream, each call\'s logs reach only its own session', { timeout: 30_000 }, async (t) => {
  const { gw, proxy } = await gatewayBehindProxy(t, never)
  const alice = await connectClient(t, gw.url)
  const bob = await connectClient(t, gw.url)
  const aliceLogs = logsOf(alice)
  const bobLogs = logsOf(bob)
  const controller = new AbortController()
  const aliceStall = alice.callTool({ name: 'web__stall', arguments: {} }, { signal: controller.signal }).catch(() => undefined)
  await waitFor(() => proxy.openRequests === 1, 'alice\'s call to be in flight')
  const result = await bob.callTool({ name: 'web__log', arguments: { count: 3, text: 'bob' } }) as ToolResult
  assert.equal(result.content[0]?.text, 'logged 3')
  assert.deepEqual(bobLogs.map(l => l.data), ['bob 1', 'bob 2', 'bob 3'])
  controller.abort()
  await aliceStall
  // Anything misrouted would have been sent before bob's answer; one more round trip flushes alice's streams.
  await alice.listTools()
  assert.deepEqual(aliceLogs, [], 'alice saw none of bob\'s logs')
})
