import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { ProtocolError, UrlElicitationRequiredError } from '@modelcontextprotocol/client'
import type { Client } from '@modelcontextprotocol/client'
import { AUTHORIZE_URL, CONSENT_URL, startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { FIXTURE_PATH, fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

type Kind = 'stdio' | 'streamable-http'
type Json = Record<string, unknown>
interface Called { text: string, isError: boolean, structured: unknown }

const WAIT_MS = 10_000

/** A unique fixture name, so counting its processes cannot see another test run's. */
function uniqueName (base: string): string {
  return `${base}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`
}

async function upstream (t: TestContext, kind: Kind, name: string, extra: Json = {}, fixtureName = name): Promise<Json> {
  if (kind === 'stdio') {
    const { command, args } = fixtureCommand(['--name', fixtureName])
    return { name, transport: 'stdio', command, args, ...extra }
  }
  const server = await startControllableHttpServer({ name: fixtureName })
  t.after(() => server.close())
  return { name, transport: 'streamable-http', url: server.url, ...extra }
}

async function gatewayWith (t: TestContext, upstreams: Json[]): Promise<RunningGateway> {
  const gw = await startGateway(t, JSON.stringify({ upstreams }))
  await waitReady(gw)
  for (const status of gw.gateway.pool.status()) assert.equal(status.state, 'ready', `${status.name}: ${status.lastError ?? ''}`)
  return gw
}

async function call (client: Client, name: string, args: Json = {}): Promise<Called> {
  const result = await client.callTool({ name, arguments: args })
  const text = (result.content as Array<{ text?: string }>).map(block => block.text ?? '').join('')
  return { text, isError: result.isError === true, structured: result.structuredContent }
}

/** Samples by echoing the prompt; the prompt "reject" is refused the way a user would refuse it. */
function answerSampling (client: Client): void {
  client.setRequestHandler('sampling/createMessage', (request) => {
    const first = request.params.messages[0]?.content
    const prompt = first !== undefined && !Array.isArray(first) && first.type === 'text' ? first.text : ''
    if (prompt === 'reject') throw new ProtocolError(-1, 'User rejected sampling')
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `echo ${prompt}` } }
  })
}

function answerRoots (client: Client, roots: Array<{ uri: string, name?: string }>): void {
  client.setRequestHandler('roots/list', () => ({ roots }))
}

async function within<T> (promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(new Error(`timed out waiting for ${what}`)) }, WAIT_MS)
    })])
  } finally {
    clearTimeout(timer)
  }
}

/** The JSON-RPC messages of an SSE response, one at a time; undefined once the stream ends. */
function sseMessages (res: Response): () => Promise<Json | undefined> {
  const body = res.body
  assert.ok(body !== null)
  const reader = body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  return async () => {
    for (;;) {
      const end = buffer.indexOf('\n\n')
      if (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const data = block.split('\n').filter(line => line.startsWith('data:')).map(line => line.slice(5).trimStart()).join('\n')
        if (data !== '') return JSON.parse(data) as Json // priming events and keepalives carry none
        continue
      }
      const chunk = await within(reader.read(), 'the next SSE event')
      if (chunk.done) return undefined
      buffer += chunk.value
    }
  }
}

/** Processes running the fixture under this name (Linux /proc). */
function fixtureProcesses (fixtureName: string): number {
  let count = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      const at = args.indexOf('--name')
      if (args.includes(FIXTURE_PATH) && at >= 0 && args[at + 1] === fixtureName) count++
    } catch {
      // The process exited while we looked.
    }
  }
  return count
}

function sessionConnections (gw: RunningGateway, name: string): number | undefined {
  return gw.gateway.pool.status().find(s => s.name === name)?.sessionConnections
}

for (const kind of ['stdio', 'streamable-http'] as const) {
  test(`${kind}: a sampling request raised during a call reaches the calling client and its answer (or refusal) returns to the upstream`, { timeout: 30_000 }, async (t) => {
    const gw = await gatewayWith(t, [await upstream(t, kind, 'up')])
    const client = await connectClient(t, gw.url, { sampling: {} })
    answerSampling(client)
    assert.deepEqual(await call(client, 'up__ask', { prompt: 'hi' }), { text: 'sampled: echo hi', isError: false, structured: { model: 'test-model', text: 'echo hi' } })
    const rejected = await call(client, 'up__ask', { prompt: 'reject' })
    assert.deepEqual([rejected.text, rejected.isError], ['error -1: User rejected sampling', true], 'the user rejection passes back with its code')
    const metrics = await scrapeMetrics(gw.baseUrl)
    const labels = { upstream: 'up', method: 'sampling/createMessage' }
    assert.equal(metricValue(metrics, 'switchboard_upstream_requests_total', { ...labels, outcome: 'ok' }), 1)
    assert.equal(metricValue(metrics, 'switchboard_upstream_requests_total', { ...labels, outcome: 'error' }), 1)
  })
}

test('raw HTTP: the call\'s response turns into SSE carrying the sampling request first; the POSTed answer (202) completes the call', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'up')])
  const init = await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { sampling: {} }, clientInfo: { name: 'raw', version: '1' } } })
  assert.equal(init.status, 200)
  await init.json()
  const sessionId = init.headers.get('mcp-session-id') ?? assert.fail('no session id')
  const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  assert.equal((await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status, 202)

  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 'call-1', method: 'tools/call', params: { name: 'up__ask', arguments: { prompt: 'raw' } } }, headers)
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'text/event-stream')
  const next = sseMessages(res)
  const request = await next() ?? assert.fail('the stream ended before the sampling request')
  assert.equal(request.method, 'sampling/createMessage')
  assert.ok(typeof request.id === 'number' || typeof request.id === 'string', 'the request carries an id to answer')
  assert.notEqual(request.id, 'call-1')
  assert.deepEqual((request.params as Json).messages, [{ role: 'user', content: { type: 'text', text: 'raw' } }])

  const answered = await rawPost(gw.url, { jsonrpc: '2.0', id: request.id, result: { role: 'assistant', model: 'raw-model', content: { type: 'text', text: 'from raw' } } }, headers)
  assert.equal(answered.status, 202)
  const response = await next() ?? assert.fail('the stream ended before the result')
  assert.equal(response.id, 'call-1')
  assert.deepEqual(response.result, { content: [{ type: 'text', text: 'sampled: from raw' }], structuredContent: { model: 'raw-model', text: 'from raw' } })
  assert.equal(await next(), undefined, 'the stream ends after the result')
})

test('a client that declared neither sampling nor elicitation: the upstream is refused at once with -32601 and the tool says so', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'up')])
  const client = await connectClient(t, gw.url)
  for (const [name, args] of [['up__ask', { prompt: 'hi' }], ['up__elicit', {}]] as const) {
    const result = await within(call(client, name, args), `${name} to come back`)
    assert.equal(result.isError, true, name)
    assert.match(result.text, /^error -32601: .*did not declare/, name)
  }
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_requests_total', { upstream: 'up', method: 'sampling/createMessage', outcome: 'unsupported' }), 1)
})

test('elicitation in form and url mode reaches the client; url mode the client did not declare is refused with -32602', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'up')])
  const seen: Json[] = []
  const both = await connectClient(t, gw.url, { elicitation: { form: {}, url: {} } })
  both.setRequestHandler('elicitation/create', (request) => {
    seen.push(request.params as Json)
    return request.params.mode === 'url' ? { action: 'decline' } : { action: 'accept', content: { answer: '42' } }
  })
  assert.equal((await call(both, 'up__elicit')).text, 'elicited: accept {"answer":"42"}')
  const url = await call(both, 'up__elicit', { mode: 'url' })
  assert.equal(url.text, 'elicited: decline null')
  const [form, consent] = seen
  assert.deepEqual(form?.requestedSchema, { type: 'object', properties: { answer: { type: 'string', description: 'Your answer' } } })
  assert.equal(consent?.mode, 'url')
  assert.equal(consent?.url, CONSENT_URL)
  assert.equal(consent?.elicitationId, (url.structured as { elicitationId: string }).elicitationId, 'the elicitationId passes unchanged')

  const formOnly = await connectClient(t, gw.url, { elicitation: {} })
  formOnly.setRequestHandler('elicitation/create', () => ({ action: 'cancel' }))
  assert.equal((await call(formOnly, 'up__elicit')).text, 'elicited: cancel null', 'an empty elicitation capability means form mode')
  const refused = await within(call(formOnly, 'up__elicit', { mode: 'url' }), 'the url elicitation to be refused')
  assert.equal(refused.isError, true)
  assert.match(refused.text, /^error -32602: .*elicitation mode url/)
  assert.equal(seen.length, 2, 'the refused request never reached a client')
})

test('a tool\'s own -32042 URL elicitation required error reaches the client unchanged', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'up')])
  const client = await connectClient(t, gw.url, { elicitation: { url: {} } })
  await assert.rejects(client.callTool({ name: 'up__need_url', arguments: {} }), (error: unknown) => {
    assert.ok(error instanceof UrlElicitationRequiredError, String(error))
    assert.equal(error.code, -32042)
    assert.deepEqual(error.elicitations.map(e => [e.mode, e.url, e.message]), [['url', AUTHORIZE_URL, 'Authorize the fixture first.']])
    assert.equal(typeof error.elicitations[0]?.elicitationId, 'string')
    return true
  })
})

test('isolation: session: each client answers roots/list for its own connection, and its roots/list_changed reaches only that one', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'iso', { isolation: 'session' })])
  const a = await connectClient(t, gw.url, { roots: { listChanged: true } })
  answerRoots(a, [{ uri: 'file:///work/a', name: 'a' }])
  const b = await connectClient(t, gw.url, { roots: {} })
  answerRoots(b, [{ uri: 'file:///work/b' }])
  assert.deepEqual(await call(a, 'iso__roots'), { text: '[{"uri":"file:///work/a","name":"a"}]', isError: false, structured: { roots: [{ uri: 'file:///work/a', name: 'a' }] } })
  assert.equal((await call(b, 'iso__roots')).text, '[{"uri":"file:///work/b"}]')
  assert.equal(sessionConnections(gw, 'iso'), 2)

  await a.sendRootsListChanged()
  await waitFor(async () => ((await call(a, 'iso__stats')).structured as { rootsChanged: number }).rootsChanged === 1, 'A\'s connection to see roots/list_changed', WAIT_MS)
  assert.equal(((await call(b, 'iso__stats')).structured as { rootsChanged: number }).rootsChanged, 0, 'B\'s connection was not told')
})

test('isolation: session gives each client its own upstream state, while a shared upstream\'s state is shared', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'iso', { isolation: 'session' }), await upstream(t, 'stdio', 'shared')])
  const a = await connectClient(t, gw.url)
  const b = await connectClient(t, gw.url)
  const counters = async (client: Client, tool: string): Promise<string[]> => [(await call(client, tool)).text, (await call(client, tool)).text]
  assert.deepEqual(await counters(a, 'iso__counter'), ['1', '2'])
  assert.deepEqual(await counters(b, 'iso__counter'), ['1', '2'])
  assert.deepEqual(await counters(a, 'shared__counter'), ['1', '2'])
  assert.deepEqual(await counters(b, 'shared__counter'), ['3', '4'])
  assert.equal(sessionConnections(gw, 'iso'), 2)
  assert.equal(sessionConnections(gw, 'shared'), 0)
})

test('ending a session closes its own stdio upstream process', { timeout: 30_000 }, async (t) => {
  const fixtureName = uniqueName('closing')
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'iso', { isolation: 'session' }, fixtureName)])
  assert.equal(fixtureProcesses(fixtureName), 1, 'only the shared connection that lists')
  const client = await connectClient(t, gw.url)
  assert.equal((await call(client, 'iso__counter')).text, '1')
  assert.equal(sessionConnections(gw, 'iso'), 1)
  assert.equal(fixtureProcesses(fixtureName), 2, 'the session got a process of its own')

  const transport = client.transport as { terminateSession?: () => Promise<void> } | undefined
  assert.ok(transport?.terminateSession !== undefined)
  await transport.terminateSession()
  await waitFor(() => sessionConnections(gw, 'iso') === 0, 'the session\'s connection to be released', WAIT_MS)
  await waitFor(() => fixtureProcesses(fixtureName) === 1, 'the session\'s process to exit', WAIT_MS)
  assert.equal(gw.gateway.pool.status()[0]?.state, 'ready', 'the shared connection stays up')
})

test('a shared upstream asking while two clients\' calls are in flight is refused with a hint to use isolation: session', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'up')])
  const a = await connectClient(t, gw.url)
  const b = await connectClient(t, gw.url, { sampling: {} })
  answerSampling(b)
  const connection = gw.gateway.pool.get('up') ?? assert.fail('no connection')
  const abort = new AbortController()
  const stalled = a.callTool({ name: 'up__stall', arguments: {} }, { signal: abort.signal })
  stalled.catch(() => {})
  await waitFor(() => connection.activeCalls.size === 1, 'A\'s call to be in flight', WAIT_MS)

  const refused = await within(call(b, 'up__ask', { prompt: 'hi' }), 'B\'s call to come back')
  assert.equal(refused.isError, true)
  assert.match(refused.text, /^error -32603: .*several clients.*isolation: session/)
  abort.abort(new Error('test done'))
  await assert.rejects(stalled)
  await waitFor(() => connection.activeCalls.size === 0, 'A\'s call to end', WAIT_MS)

  assert.equal((await call(b, 'up__ask', { prompt: 'alone' })).text, 'sampled: echo alone', 'alone on the connection, B is asked')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_requests_total', { upstream: 'up', method: 'sampling/createMessage', outcome: 'unroutable' }), 1)
})

test('isolation: session is capped by maxSessionConnections: the session over the cap gets an isError result, not a new process', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [await upstream(t, 'stdio', 'iso', { isolation: 'session', maxSessionConnections: 1 })])
  const a = await connectClient(t, gw.url)
  const b = await connectClient(t, gw.url)
  assert.equal((await call(a, 'iso__counter')).text, '1')
  const refused = await call(b, 'iso__counter')
  assert.equal(refused.isError, true)
  assert.match(refused.text, /"iso".*maxSessionConnections/)
  assert.equal(sessionConnections(gw, 'iso'), 1)
  await (a.transport as { terminateSession?: () => Promise<void> } | undefined)?.terminateSession?.()
  await waitFor(() => sessionConnections(gw, 'iso') === 0, 'the first session to release its connection', WAIT_MS)
  assert.equal((await call(b, 'iso__counter')).text, '1', 'a freed slot is taken by the next session')
})
