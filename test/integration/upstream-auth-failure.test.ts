import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { startFaultProxy } from '../helpers/fault-proxy.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, { code?: string, status?: number }> }

const FAILURE_THRESHOLD = 2

test('an upstream answering 401 fails only that call with SB_ERR_UPSTREAM_AUTH; the circuit stays closed past failureThreshold and other clients are served', { timeout: 30_000 }, async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const proxy = await startFaultProxy(http.url, (body) => body.includes('"deny-me"') ? { status: 401 } : undefined)
  t.after(() => proxy.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: proxy.url, circuitBreaker: { failureThreshold: FAILURE_THRESHOLD } }]
  }))
  await waitReady(gw)
  const refused = await connectClient(t, gw.url)
  for (let i = 0; i < FAILURE_THRESHOLD + 2; i++) {
    const result = await refused.callTool({ name: 'web__echo', arguments: { text: 'deny-me' } }) as ToolResult
    assert.equal(result.isError, true)
    assert.equal(result._meta?.['switchboard/error']?.code, 'SB_ERR_UPSTREAM_AUTH')
    assert.equal(result._meta?.['switchboard/error']?.status, 401)
    assert.match(result.content[0]?.text ?? '', /answered HTTP 401/)
  }
  assert.equal(proxy.injected, FAILURE_THRESHOLD + 2)
  assert.equal(gw.gateway.pool.breaker('web')?.state, 'closed')
  assert.equal(gw.gateway.pool.breaker('web')?.failures, 0)
  const other = await connectClient(t, gw.url)
  assert.equal((await other.callTool({ name: 'web__echo', arguments: { text: 'hello' } }) as ToolResult).content[0]?.text, 'hello')
  assert.equal((await refused.callTool({ name: 'web__echo', arguments: { text: 'still fine' } }) as ToolResult).content[0]?.text, 'still fine', 'the refused client\'s other calls are served too')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_state', { upstream: 'web', state: 'closed' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_upstream_reconnects_total', { upstream: 'web' }), 0)
})

test('an upstream that refuses the credential at every connect attempt does not open its circuit', { timeout: 30_000 }, async (t) => {
  let attempts = 0
  const server = createServer((req, res) => {
    req.resume().on('end', () => {
      if (req.method === 'POST') attempts++
      res.writeHead(401, { 'www-authenticate': 'Bearer' }).end()
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'locked', transport: 'streamable-http', url, protocol: '2025-11-25', circuitBreaker: { failureThreshold: FAILURE_THRESHOLD } }]
  }))
  await waitFor(() => (gw.gateway.pool.get('locked')?.reconnects ?? 0) > FAILURE_THRESHOLD, 'more failed connect attempts than failureThreshold', 20_000)
  assert.ok(attempts > FAILURE_THRESHOLD)
  assert.match(gw.gateway.pool.get('locked')?.lastError ?? '', /HTTP 401/)
  assert.equal(gw.gateway.pool.breaker('locked')?.state, 'closed')
  assert.equal(gw.gateway.pool.breaker('locked')?.failures, 0)
})
