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

test('a Streamable HTTP upstream SIGKILLed with streamed calls in flight counts as one circuit failure, not one per call it cut: the circuit opens only after the failed reconnect attempts', { timeout: 120_000 }, async (t) => {
  const web = await startFixtureProcess(['--transport', 'http', '--name', 'web', '--port', '0'])
  t.after(async () => { await web.stop() })
  const THRESHOLD = 4
  const gw = await startGateway(t, `
upstreams:
  - name: web
    transport: streamable-http
    url: ${web.url}
    timeoutMs: 30000
    circuitBreaker: { failureThreshold: ${THRESHOLD}, cooldownMs: 60000 }
`)
  await waitFor(() => gw.logs.some(l => l.upstream === 'web' && l.msg === 'upstream connected'), 'the upstream to connect')
  const { sessionId } = await rawInitialize(gw.url)
  const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  // More calls in flight than the threshold, each on its own stream from the upstream, and nothing else sent.
  const calls = await Promise.all(Array.from({ length: THRESHOLD + 2 }, async (_, i) => {
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: `cut-${i}`, method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 30_000, steps: 30 }, _meta: { progressToken: `p${i}` } } }, headers)
    assert.equal(res.headers.get('content-type'), 'text/event-stream')
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    let seen = ''
    while (!seen.includes('notifications/progress')) {
      const { value, done } = await reader.read()
      if (done) break
      seen += new TextDecoder().decode(value)
    }
    return reader
  }))
  t.after(async () => { await Promise.all(calls.map(async r => { await r.cancel().catch(() => {}) })) })

  web.kill('SIGKILL')
  await web.exited
  const opened = await waitFor(() => {
    const at = gw.logs.findIndex(l => l.upstream === 'web' && typeof l.msg === 'string' && l.msg.startsWith('circuit opened'))
    return at === -1 ? undefined : at
  }, 'the circuit to open while the upstream stays down', 60_000)
  const attempts = gw.logs.slice(0, opened).filter(l => l.upstream === 'web' && l.msg === 'upstream connection failed').length
  assert.ok(attempts >= THRESHOLD - 1, `the lost connection and ${THRESHOLD - 1} failed reconnect attempts opened it, not the ${THRESHOLD + 2} calls the crash cut (failed attempts before it opened: ${attempts})`)
})
