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
async function call (url: string, id: number, name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Rpc> {
  const res = await rawPost(url, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: args, ...extra, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { sampling: {}, elicitation: {} } } }
  }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name, ...headers })
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

/** The first round of a sampling call: its requestState and answers to its one question, saying `text`. */
async function asked (url: string, prompt: string, text: string, headers: Record<string, string> = {}): Promise<{ requestState: string, answers: Record<string, unknown> }> {
  const first = await call(url, 1, SAMPLING_TOOL, { prompt, maxTokens: 5 }, {}, headers)
  assert.equal(first.result?.resultType, 'input_required')
  const key = Object.keys(first.result?.inputRequests as object)[0] as string
  return { requestState: first.result?.requestState as string, answers: { [key]: { role: 'assistant', model: 'm', content: { type: 'text', text } } } }
}

test('a retry with the right requestState but other arguments, another tool or unasked answers is -32602 and leaves the call waiting: the right retry still gets its result', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const { requestState, answers } = await asked(gw.url, 'bound', 'the bound answer')
  const otherArgs = await call(gw.url, 2, SAMPLING_TOOL, { prompt: 'something else', maxTokens: 5 }, { inputResponses: answers, requestState })
  assert.equal(otherArgs.error?.code, -32602)
  assert.deepEqual(otherArgs.error?.data, { reason: 'invalid_request_state' })
  assert.match(otherArgs.error?.message ?? '', /does not repeat its request.*arguments/)
  const otherTool = await call(gw.url, 3, 'everything__echo', { message: 'bound' }, { inputResponses: answers, requestState })
  assert.equal(otherTool.error?.code, -32602)
  const unasked = await call(gw.url, 4, SAMPLING_TOOL, { prompt: 'bound', maxTokens: 5 }, { inputResponses: { 'not-asked': {} }, requestState })
  assert.equal(unasked.error?.code, -32602)
  assert.match(unasked.error?.message ?? '', /not asked/)

  // The same arguments in another key order, and another _meta, are the same request.
  const done = await call(gw.url, 5, SAMPLING_TOOL, { maxTokens: 5, prompt: 'bound' }, { inputResponses: answers, requestState })
  assert.equal(done.id, 5)
  assert.equal(done.result?.resultType, 'complete')
  assert.match(JSON.stringify(done.result?.content), /the bound answer/)
  const metrics = await scrapeMetrics(gw.baseUrl)
  const outcome = (o: string): number | undefined => metricValue(metrics, 'switchboard_input_required_total', { outcome: o })
  assert.deepEqual([outcome('asked'), outcome('resumed'), outcome('refused')], [1, 1, 3])
  assert.equal(metricValue(metrics, 'switchboard_input_required_pending'), 0)
})

test('another principal\'s retry carrying someone\'s requestState is refused with -32602 and does not consume the call: its owner\'s retry then gets the result', { timeout: 60_000 }, async (t) => {
  const keys = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
  const config = { ...JSON.parse(modernEverythingConfig()) as Record<string, unknown>, auth: { apiKeys: [{ id: 'alice', key: keys.alice }, { id: 'bob', key: keys.bob }] } }
  const gw = await startGateway(t, JSON.stringify(config))
  await waitReady(gw)
  const as = (who: keyof typeof keys): Record<string, string> => ({ authorization: `Bearer ${keys[who]}` })
  const { requestState, answers } = await asked(gw.url, 'alice asks', 'alice\'s answer', as('alice'))

  const stolen = await call(gw.url, 2, SAMPLING_TOOL, { prompt: 'alice asks', maxTokens: 5 }, { inputResponses: { ...answers }, requestState }, as('bob'))
  assert.equal(stolen.error?.code, -32602)
  assert.deepEqual(stolen.error?.data, { reason: 'invalid_request_state' })

  const own = await call(gw.url, 3, SAMPLING_TOOL, { prompt: 'alice asks', maxTokens: 5 }, { inputResponses: answers, requestState }, as('alice'))
  assert.equal(own.result?.resultType, 'complete', 'the call still waited for alice')
  assert.match(JSON.stringify(own.result?.content), /alice's answer/)
  assert.match(stolen.error?.message ?? '', /another principal/)
  assert.doesNotMatch(JSON.stringify(stolen), /alice/, 'bob learns nothing of the call or its owner')
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
