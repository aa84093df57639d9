import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startFixtureProcess, type FixtureProcess } from '../helpers/spawn-fixture.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor } from '../helpers/start-gateway.ts'

// The soak's http-upstream-crash: the shared Streamable HTTP upstream is SIGKILLed under load, with
// calls in flight on it, and started again on the same port.

const WORKERS = 8

test('a Streamable HTTP upstream SIGKILLed under load and started again on its port is called again as soon as the gateway has reconnected: circuit closed, no "Unknown tool", every call after the reconnect answered', { timeout: 120_000 }, async (t) => {
  const fixture = async (port: string): Promise<FixtureProcess> => {
    const web = await startFixtureProcess(['--transport', 'http', '--name', 'web', '--port', port])
    t.after(async () => { await web.stop() })
    return web
  }
  const first = await fixture('0')
  const port = new URL(first.url).port
  const gw = await startGateway(t, `
upstreams:
  - name: web
    transport: streamable-http
    url: ${first.url}
    timeoutMs: 10000
`)
  const connected = (): number => gw.logs.filter(l => l.upstream === 'web' && l.msg === 'upstream connected').length
  await waitFor(() => connected() === 1, 'the first connection')
  const running = { stop: false }
  let reconnected = false
  const failures: string[] = []
  const afterReconnect: string[] = []
  const worker = async (w: number): Promise<void> => {
    const { sessionId } = await rawInitialize(gw.url)
    const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
    for (let n = 0; !running.stop && n < 100_000; n++) {
      // Half of the workers keep a slow call with progress in flight, so that the crash cuts calls and streams.
      const params = w % 2 === 0
        ? { name: 'web__slow', arguments: { ms: 400, steps: 2 }, _meta: { progressToken: `p${w}-${n}` } }
        : { name: 'web__echo', arguments: { text: `w${w}-${n}` } }
      const sentAfterReconnect = reconnected
      const res = await rawPost(gw.url, { jsonrpc: '2.0', id: `${w}-${n}`, method: 'tools/call', params }, headers)
      const text = await res.text()
      if (res.status === 200 && !text.includes('"isError":true') && !text.includes('"error"')) continue
      failures.push(text)
      if (sentAfterReconnect) afterReconnect.push(text)
    }
  }
  const load = Promise.all(Array.from({ length: WORKERS }, async (_, w) => { await worker(w) }))
  t.after(async () => { running.stop = true; await load })
  await waitFor(() => gw.logs.filter(l => l.component === 'audit' && l.outcome === 'ok').length >= 40, 'calls to flow')

  first.kill('SIGKILL')
  await first.exited
  await fixture(port)
  await waitFor(() => connected() === 2, 'the gateway to reconnect to the restarted upstream', 60_000)
  reconnected = true
  const okBefore = gw.logs.filter(l => l.component === 'audit' && l.outcome === 'ok').length
  await waitFor(() => gw.logs.filter(l => l.component === 'audit' && l.outcome === 'ok').length >= okBefore + 100, 'calls after the reconnect', 30_000)
  running.stop = true
  await load

  assert.ok(failures.length > 0, 'the crash cut or refused some calls (else the test tested nothing)')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_state', { upstream: 'web', state: 'closed' }), 1, 'the circuit is closed')
  assert.deepEqual(afterReconnect.slice(0, 3), [], `every call sent after the reconnect was answered (${afterReconnect.length} were not)`)
  assert.ok(!failures.some(f => f.includes('Unknown tool')), `no "Unknown tool" while the upstream restarted: ${failures.find(f => f.includes('Unknown tool'))}`)
})
