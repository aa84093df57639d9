// Findings of the fuzz tests (test/fuzz/), pinned down as plain regression tests; most against the
// fuzzing upstream (test/fixtures/fuzzing-upstream.ts), which answers as each call's plan says.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { startFuzzingHttpUpstream } from '../fixtures/fuzzing-upstream.ts'
import { rawInitialize, rawPost, startGateway, waitReady } from '../helpers/start-gateway.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/fuzzing-upstream.ts', import.meta.url))

test('an upstream error whose code is not an integer (1e400, 1.5) reaches the client as -32603 with its message, not as code null', async (t) => {
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'liar', transport: 'stdio', command: process.execPath, args: ['--import', import.meta.resolve('tsx'), FIXTURE] }]
  }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  // Found by test/fuzz/upstream-replies.test.ts: 1e400 parses as Infinity, which JSON.stringify writes as null.
  for (const [n, code] of [[1, '1e400'], [2, '1.5'], [3, '-1e400']] as const) {
    const lines = [`{"jsonrpc":"2.0","id":__ID__,"error":{"code":${code},"message":"odd code ${code}"}}`]
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'liar__lie', arguments: { plan: { lines } } } }, { 'mcp-session-id': sessionId })
    assert.equal(res.status, 200)
    const body = await res.json() as { id: number, error?: { code: unknown, message: string } }
    assert.equal(body.id, n)
    assert.equal(body.error?.code, -32603, `code ${code}: ${JSON.stringify(body)}`)
    assert.match(body.error?.message ?? '', new RegExp(`odd code ${code.replace('.', '\\.')}`))
  }
  // An integer code still passes through as the upstream sent it.
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'liar__lie', arguments: { plan: { lines: ['{"jsonrpc":"2.0","id":__ID__,"error":{"code":-32042,"message":"url needed"}}'] } } } }, { 'mcp-session-id': sessionId })
  assert.deepEqual(((await res.json()) as { error: unknown }).error, { code: -32042, message: 'url needed' })
})

test('an HTTP upstream answering a call with a body that is not JSON fails that call with a result naming SB_ERR_UPSTREAM_PROTOCOL, not a bare "internal error" logged as unexpected', async (t) => {
  const upstream = await startFuzzingHttpUpstream()
  t.after(upstream.close)
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'liar', transport: 'streamable-http', url: upstream.url, protocol: '2025-11-25' }] }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  // Found by test/fuzz/upstream-replies.test.ts: a JSON content type with garbage (or nothing) in the body.
  const plans = [{ lines: ['not json'], http: 'json' }, { lines: [], http: 200 }]
  for (const [i, plan] of plans.entries()) {
    const call = await rawPost(gw.url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'liar__lie', arguments: { plan } } }, { 'mcp-session-id': sessionId })
    const result = (await call.json() as { result?: { isError?: boolean, content: Array<{ text: string }>, _meta: Record<string, { code: string }> } }).result
    assert.equal(result?.isError, true, JSON.stringify(result))
    assert.equal(result?._meta['switchboard/error']?.code, 'SB_ERR_UPSTREAM_PROTOCOL')
    assert.match(result?.content[0]?.text ?? '', /not a JSON-RPC answer/)
    const prompt = await rawPost(gw.url, { jsonrpc: '2.0', id: 10 + i, method: 'prompts/get', params: { name: 'liar__lie', arguments: { plan: JSON.stringify(plan) } } }, { 'mcp-session-id': sessionId })
    const error = (await prompt.json() as { error?: { code: number, message: string, data: Record<string, { code: string }> } }).error
    assert.equal(error?.code, -32603)
    assert.match(error?.message ?? '', /not a JSON-RPC answer/)
    assert.equal(error?.data['switchboard/error']?.code, 'SB_ERR_UPSTREAM_PROTOCOL')
  }
  assert.deepEqual(gw.logs.filter(l => l.msg === 'request failed'), [])
  // The upstream's other calls are not affected.
  const honest = await rawPost(gw.url, { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'liar__honest', arguments: { text: 'still here' } } }, { 'mcp-session-id': sessionId })
  assert.deepEqual((await honest.json() as { result: unknown }).result, { content: [{ type: 'text', text: 'still here' }] })
})

test('a client\'s _meta.traceparent that is not a W3C value (a newline, non-ASCII, any text) is not sent to an HTTP upstream as a header, so the shared upstream stays up', async (t) => {
  const upstream = await startControllableHttpServer({ name: 'up' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'up', transport: 'streamable-http', url: upstream.url }] }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  // Found by fuzzing: undici refused the header value, which the gateway took for a lost connection,
  // so one client's request took the upstream away from everyone (reconnect, "Unknown tool" meanwhile).
  const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
  const odd = ['bad\nvalue', '€uro', 'x'.repeat(100), valid + '\r', valid.toUpperCase()]
  for (const [i, traceparent] of odd.entries()) {
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'up__echo', arguments: { text: `call ${i}` }, _meta: { traceparent, tracestate: 'a=1\nb=2' } } }, { 'mcp-session-id': sessionId })
    const body = await res.json() as { result?: { isError?: boolean, structuredContent?: { text?: string } } }
    assert.equal(body.result?.isError, undefined, `traceparent ${JSON.stringify(traceparent)}: ${JSON.stringify(body)}`)
    assert.equal(body.result?.structuredContent?.text, `call ${i}`)
  }
  const [status] = gw.gateway.pool.status()
  assert.equal(status?.state, 'ready')
  assert.equal(status?.reconnects, 0)
  assert.deepEqual(gw.logs.filter(l => l.msg.includes('connection lost')).map(l => l.msg), [])
  // A valid one still goes as the traceparent header.
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 99, method: 'tools/call', params: { name: 'up__whoami', arguments: {}, _meta: { traceparent: valid } } }, { 'mcp-session-id': sessionId })
  const seen = (await res.json() as { result: { structuredContent: { headers: Record<string, string> } } }).result.structuredContent.headers
  assert.equal(seen.traceparent, valid)
})
