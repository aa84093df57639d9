import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { MODERN, modernEverythingConfig } from '../helpers/modern-era.ts'
import { metricValue, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// The bridge between the eras: a 2025-11-25 upstream (server-everything over stdio, whose tools ask
// the client for sampling and elicitation mid-call) and 2026-07-28 clients, which can only be asked
// through input_required results and answer by retrying the request.
const SAMPLING_TOOL = 'everything__trigger-sampling-request'

async function gateway (t: TestContext, http: Record<string, unknown> = {}): Promise<RunningGateway> {
  const gw = await startGateway(t, modernEverythingConfig(http))
  await waitReady(gw)
  return gw
}

interface Rpc { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string, data?: Record<string, unknown> } }

/** tools/call as a 2026-07-28 client sends it, declaring sampling; `extra` goes into params (a retry's answers). */
async function call (url: string, id: number, name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Rpc> {
  const res = await rawPost(url, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, ...extra, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {} } } }
  }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name })
  assert.equal(res.status, 200)
  return await res.json() as Rpc
}

test('the SDK client pinned to 2026-07-28 answers an upstream\'s sampling and elicitation through input_required and gets the upstream\'s real final results', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const client = new Client({ name: 'modern', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } })
  client.setRequestHandler('sampling/createMessage', () => ({ role: 'assistant', model: 'test-model', content: { type: 'text', text: 'sampled across the eras' } }))
  client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { color: 'green' } }))
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)))
  t.after(async () => { await client.close().catch(() => {}) })

  const sampled = await client.callTool({ name: SAMPLING_TOOL, arguments: { prompt: 'hi', maxTokens: 5 } }) as { content: Array<{ text?: string }> }
  assert.match(sampled.content[0]?.text ?? '', /LLM sampling result:[\s\S]*sampled across the eras/)
  const elicited = await client.callTool({ name: 'everything__trigger-elicitation-request', arguments: {} }) as { content: Array<{ text?: string }> }
  assert.match(JSON.stringify(elicited.content), /green/)
  assert.equal(gw.gateway.sessions.size, 0, 'no session at any point')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_requests_total', { upstream: 'everything', method: 'sampling/createMessage', outcome: 'ok' }), 1)
})

test('on the wire: input_required carries the upstream\'s question and a signed requestState; an altered or reused requestState is -32602, the right retry gets the final result', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const first = await call(gw.url, 1, SAMPLING_TOOL, { prompt: 'wire', maxTokens: 5 })
  assert.equal(first.id, 1)
  assert.equal(first.result?.resultType, 'input_required')
  const inputRequests = first.result?.inputRequests as Record<string, { method: string, params: { messages: unknown[] } }>
  const keys = Object.keys(inputRequests)
  assert.equal(keys.length, 1)
  const key = keys[0] as string
  assert.equal(inputRequests[key]?.method, 'sampling/createMessage')
  assert.match(JSON.stringify(inputRequests[key]?.params.messages), /wire/)
  const requestState = first.result?.requestState as string
  assert.equal(typeof requestState, 'string')

  const answers = { [key]: { role: 'assistant', model: 'm', content: { type: 'text', text: 'wired answer' } } }
  const tampered = await call(gw.url, 2, SAMPLING_TOOL, { prompt: 'wire', maxTokens: 5 }, { inputResponses: answers, requestState: requestState.slice(0, -2) + (requestState.endsWith('AA') ? 'BB' : 'AA') })
  assert.equal(tampered.error?.code, -32602)
  assert.deepEqual(tampered.error?.data, { reason: 'invalid_request_state' })

  const done = await call(gw.url, 3, SAMPLING_TOOL, { prompt: 'wire', maxTokens: 5 }, { inputResponses: answers, requestState })
  assert.equal(done.id, 3, 'the answer carries the retry\'s id')
  assert.equal(done.result?.resultType, 'complete')
  assert.match(JSON.stringify(done.result?.content), /wired answer/)

  const reused = await call(gw.url, 4, SAMPLING_TOOL, { prompt: 'wire', maxTokens: 5 }, { inputResponses: answers, requestState })
  assert.equal(reused.error?.code, -32602, 'a requestState resumes one call once')
  const metrics = await scrapeMetrics(gw.baseUrl)
  const outcome = (o: string): number | undefined => metricValue(metrics, 'switchboard_input_required_total', { outcome: o })
  assert.deepEqual([outcome('asked'), outcome('resumed'), outcome('refused'), outcome('expired')], [1, 1, 2, 0])
  assert.equal(metricValue(metrics, 'switchboard_input_required_pending'), 0)
})

test('a retry that never comes frees the waiting upstream request within http.inputRequired.ttlMs: the upstream is told, and the late retry is -32602', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t, { inputRequired: { ttlMs: 300 } })
  const first = await call(gw.url, 1, SAMPLING_TOOL, { prompt: 'never answered', maxTokens: 5 })
  assert.equal(first.result?.resultType, 'input_required')
  // The upstream's sampling request failed (the client session it waited on closed) once the bound passed.
  await waitFor(async () => (metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_upstream_requests_total', { upstream: 'everything', method: 'sampling/createMessage', outcome: 'error' }) ?? 0) >= 1, 'the waiting sampling request to fail', 10_000)
  const key = Object.keys(first.result?.inputRequests as object)[0] as string
  const late = await call(gw.url, 2, SAMPLING_TOOL, { prompt: 'never answered', maxTokens: 5 }, { inputResponses: { [key]: { role: 'assistant', model: 'm', content: { type: 'text', text: 'too late' } } }, requestState: first.result?.requestState })
  assert.equal(late.error?.code, -32602)
  assert.match(late.error?.message ?? '', /expired/)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_input_required_total', { outcome: 'expired' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_input_required_pending'), 0)
  // The upstream still serves the next call.
  const echo = await call(gw.url, 3, 'everything__echo', { message: 'still here' })
  assert.match(JSON.stringify(echo.result?.content), /still here/)
})

test('behind an upstream with isolation: session, a modern call gets a connection of its own that declares the client\'s roots, answers roots/list through input_required, and is closed after', { timeout: 60_000 }, async (t) => {
  const gw = await startGateway(t, modernEverythingConfig({}, { isolation: 'session' }))
  await waitReady(gw)
  const client = new Client({ name: 'modern', version: '1.0.0' }, { capabilities: { roots: {} }, versionNegotiation: { mode: { pin: MODERN } } })
  client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///modern/root', name: 'modern root' }] }))
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)))
  t.after(async () => { await client.close().catch(() => {}) })
  const roots = await client.callTool({ name: 'everything__get-roots-list', arguments: {} }) as { content: Array<{ text?: string }> }
  assert.match(roots.content[0]?.text ?? '', /file:\/\/\/modern\/root/, 'the upstream saw the modern client\'s own roots')
  await waitFor(() => gw.gateway.pool.status()[0]?.sessionConnections === 0 || undefined, 'the call\'s own upstream connection to close')
})
