import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { Client } from '@modelcontextprotocol/client'
import { WebSocket } from 'ws'
import { MODERN } from '../helpers/modern-era.ts'
import { fixtureCommand, startFixtureProcess } from '../helpers/spawn-fixture.ts'
import { connectClient, rawInitialize, rawPost, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// Defect 1 of issue 24: a request nested 6,000 levels deep overflowed JSON.stringify's stack in
// the upstream transport's send, which was taken for a lost connection: the shared upstream was
// restarted, everyone's calls on it were cut and its tools left the catalog. Real upstreams here: a
// stdio process and a Streamable HTTP process, both shared by every client.

const DEPTH = 6_000
const WAIT_MS = 15_000
const SLOW_MS = 2_500
const UPSTREAMS = ['local', 'remote'] as const
const ENVELOPE = `"io.modelcontextprotocol/protocolVersion":"${MODERN}","io.modelcontextprotocol/clientCapabilities":{}`

interface Rpc { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string } }
interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

/** A value nested `DEPTH` levels deep, as text: built without JSON.stringify, which could not write it. */
const deep = '{"a":'.repeat(DEPTH) + '1' + '}'.repeat(DEPTH)

function callDeep (upstream: string, id: number, meta = ''): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${upstream}__echo","arguments":{"text":"x","nested":${deep}}${meta === '' ? '' : `,"_meta":{${meta}}`}}}`
}

function promptDeep (upstream: string, id: number, meta = ''): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"prompts/get","params":{"name":"${upstream}__plain","_meta":{${meta === '' ? '' : `${meta},`}"nested":${deep}}}}`
}

interface Setup { gw: RunningGateway, other: Client, counters: Record<string, number> }

/**
 * The gateway in front of both shared upstreams (and an endpoint that finds tools with call_tool),
 * and another client that has used each upstream once already.
 */
async function setup (t: TestContext, http: Record<string, unknown> = {}): Promise<Setup> {
  const remote = await startFixtureProcess(['--transport', 'http', '--name', 'remote'])
  t.after(async () => { await remote.stop() })
  const local = fixtureCommand(['--name', 'local'])
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [
      { name: 'local', transport: 'stdio', command: local.command, args: local.args },
      { name: 'remote', transport: 'streamable-http', url: remote.url }
    ],
    endpoints: [{ name: 'finder', discovery: 'search' }],
    http
  }))
  await waitReady(gw)
  const other = await connectClient(t, gw.url)
  const counters: Record<string, number> = {}
  for (const upstream of UPSTREAMS) counters[upstream] = await counter(other, upstream)
  return { gw, other, counters }
}

/** The fixture's per-connection counter: it goes on counting only on the same process (stdio) or session (HTTP). */
async function counter (client: Client, upstream: string): Promise<number> {
  const result = await client.callTool({ name: `${upstream}__counter`, arguments: {} }) as { structuredContent: { counter: number } }
  return result.structuredContent.counter
}

/** Slow calls of the other client on both shared upstreams, in flight while the deep requests arrive. */
function slowCalls (other: Client): Array<Promise<unknown>> {
  return UPSTREAMS.map(async upstream => await other.callTool({ name: `${upstream}__slow`, arguments: { ms: SLOW_MS } }, { timeout: WAIT_MS }))
}

/** The other client's calls finished normally, no upstream was reconnected or restarted, and their tools are listed. */
async function assertUntouched (setup: Setup, inFlight: Array<Promise<unknown>>): Promise<void> {
  const { gw, other, counters } = setup
  for (const result of await Promise.all(inFlight) as ToolResult[]) {
    assert.equal(result.isError, undefined, `the other client's slow call was not cut: ${JSON.stringify(result)}`)
    assert.equal(result.content[0]?.text, 'done')
  }
  for (const status of gw.gateway.pool.status()) {
    assert.equal(status.state, 'ready', `${status.name} stayed connected`)
    assert.equal(status.reconnects, 0, `${status.name} was never reconnected`)
    assert.equal(status.circuit, 'closed', `${status.name}'s circuit stayed closed`)
  }
  for (const upstream of UPSTREAMS) {
    assert.equal(await counter(other, upstream), (counters[upstream] ?? 0) + 1, `${upstream}: the same process or session as before`)
  }
  const tools = (await other.listTools()).tools.map(tool => tool.name)
  for (const upstream of UPSTREAMS) assert.ok(tools.includes(`${upstream}__echo`), `${upstream}'s tools are still listed`)
  assert.equal(gw.logs.some(line => line.msg === 'upstream connection lost; reconnecting'), false, 'no connection was taken for lost')
}

/** A raw WebSocket session that collects what it receives. */
async function openSocket (t: TestContext, gw: RunningGateway): Promise<{ ws: WebSocket, inbox: Rpc[] }> {
  const ws = new WebSocket(gw.url.replace(/^http/, 'ws'), 'mcp')
  const inbox: Rpc[] = []
  ws.on('message', (data) => { inbox.push(JSON.parse(String(data)) as Rpc) })
  t.after(() => { ws.terminate() })
  await once(ws, 'open', { signal: AbortSignal.timeout(WAIT_MS) })
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-ws', version: '1' } } }))
  await waitFor(() => inbox.find(m => m.id === 1), 'the WebSocket initialize answer', WAIT_MS)
  ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  return { ws, inbox }
}

async function answerOn (inbox: Rpc[], matches: (m: Rpc) => boolean, what: string): Promise<Rpc> {
  return await waitFor(() => inbox.find(matches), what, WAIT_MS)
}

async function post (url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number, body: Rpc }> {
  const res = await rawPost(url, body, headers)
  return { status: res.status, body: await res.json() as Rpc }
}

/** A 2026-07-28 request (no session): the envelope in _meta, the method and name in headers. */
function modernHeaders (method: string, name: string): Record<string, string> {
  return { 'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': name }
}

/** The legacy HTTP+SSE transport's POST URI, read from the stream's endpoint event; `stream` ends it. */
async function legacyEndpoint (gw: RunningGateway, stream: AbortController): Promise<string> {
  const res = await fetch(`${gw.baseUrl}/sse`, { headers: { accept: 'text/event-stream' }, signal: stream.signal })
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let seen = ''
  for (;;) {
    const match = /data: (\/messages\?sessionId=\S+)\n/.exec(seen)
    if (match?.[1] !== undefined) return `${gw.baseUrl}${match[1]}`
    const { value, done } = await reader.read()
    if (done) throw new Error('the legacy stream ended before its endpoint event')
    seen += decoder.decode(value, { stream: true })
  }
}

const TOO_DEEP = /^Invalid Request: the message nests objects and arrays more than 64 levels deep \(http\.maxJsonDepth\)$/

test('a message nested deeper than http.maxJsonDepth is refused with -32600 on every entry, and another client\'s calls on the shared upstreams go on untouched', { timeout: 120_000 }, async (t) => {
  const s = await setup(t)
  const { gw } = s
  const inFlight = slowCalls(s.other)
  const { sessionId } = await rawInitialize(gw.url)
  const refusals: Array<{ where: string, status: number, body: Rpc }> = []
  for (const upstream of UPSTREAMS) {
    refusals.push({ where: `POST /mcp tools/call ${upstream}`, ...await post(gw.url, callDeep(upstream, 2), { 'mcp-session-id': sessionId }) })
    refusals.push({ where: `POST /mcp prompts/get ${upstream}`, ...await post(gw.url, promptDeep(upstream, 3), { 'mcp-session-id': sessionId }) })
    refusals.push({ where: `2026-07-28 tools/call ${upstream}`, ...await post(gw.url, callDeep(upstream, 4, ENVELOPE), modernHeaders('tools/call', `${upstream}__echo`)) })
    refusals.push({ where: `2026-07-28 prompts/get ${upstream}`, ...await post(gw.url, promptDeep(upstream, 5, ENVELOPE), modernHeaders('prompts/get', `${upstream}__plain`)) })
  }
  const finder = await rawInitialize(`${gw.url}/finder`)
  refusals.push({
    where: 'POST /mcp/finder call_tool',
    ...await post(`${gw.url}/finder`, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"local__echo","arguments":{"text":"x","nested":${deep}}}}}`, { 'mcp-session-id': finder.sessionId })
  })
  const legacy = new AbortController()
  try {
    refusals.push({ where: 'legacy SSE POST /messages', ...await post(await legacyEndpoint(gw, legacy), callDeep('local', 7)) })
  } finally {
    legacy.abort()
  }
  for (const { where, status, body } of refusals) {
    assert.equal(status, 400, `${where}: HTTP 400`)
    assert.equal(body.error?.code, -32600, `${where}: -32600`)
    assert.match(body.error?.message ?? '', TOO_DEEP, where)
  }

  // WebSocket: an error on the socket, which stays open and goes on serving its session.
  const { ws, inbox } = await openSocket(t, gw)
  ws.send(callDeep('remote', 8))
  ws.send(promptDeep('local', 9))
  await waitFor(() => inbox.filter(m => m.error !== undefined).length >= 2 || undefined, 'two refusals on the socket', WAIT_MS)
  for (const refusal of inbox.filter(m => m.error !== undefined)) {
    assert.equal(refusal.id, null)
    assert.equal(refusal.error?.code, -32600)
    assert.match(refusal.error?.message ?? '', TOO_DEEP)
  }
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'remote__echo', arguments: { text: 'still open' } } }))
  const echoed = await answerOn(inbox, m => m.id === 10, 'the echo after the refusals')
  assert.equal((echoed.result as unknown as ToolResult).content[0]?.text, 'still open')
  assert.equal(ws.readyState, WebSocket.OPEN)

  await assertUntouched(s, inFlight)
})

test('a message exactly http.maxJsonDepth deep passes the edge', async (t) => {
  const gw = await startGateway(t, JSON.stringify({ http: { maxJsonDepth: 8 } }))
  const { sessionId } = await rawInitialize(gw.url)
  // Depth 8: the message, params, _meta, then five levels of value.
  const atLimit = await post(gw.url, '{"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta":{"v":[[[[[1]]]]]}}}', { 'mcp-session-id': sessionId })
  assert.equal(atLimit.status, 200)
  assert.deepEqual(atLimit.body.result, {})
  const beyond = await post(gw.url, '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"v":[[[[[[1]]]]]]}}}', { 'mcp-session-id': sessionId })
  assert.equal(beyond.status, 400)
  assert.equal(beyond.body.error?.code, -32600)
  assert.match(beyond.body.error?.message ?? '', /more than 8 levels deep/)
})

test('past the edge (http.maxJsonDepth raised), a request too deep to write fails alone with -32600 and no upstream is taken for lost', { timeout: 120_000 }, async (t) => {
  const s = await setup(t, { maxJsonDepth: 100_000 })
  const { gw } = s
  const inFlight = slowCalls(s.other)
  const { sessionId } = await rawInitialize(gw.url)
  const answers: Array<{ where: string, status: number, body: Rpc }> = []
  for (const upstream of UPSTREAMS) {
    for (let round = 0; round < 3; round++) {
      answers.push({ where: `POST /mcp tools/call ${upstream}`, ...await post(gw.url, callDeep(upstream, 2), { 'mcp-session-id': sessionId }) })
      answers.push({ where: `POST /mcp prompts/get ${upstream}`, ...await post(gw.url, promptDeep(upstream, 3), { 'mcp-session-id': sessionId }) })
    }
    answers.push({ where: `2026-07-28 tools/call ${upstream}`, ...await post(gw.url, callDeep(upstream, 4, ENVELOPE), modernHeaders('tools/call', `${upstream}__echo`)) })
    answers.push({ where: `2026-07-28 prompts/get ${upstream}`, ...await post(gw.url, promptDeep(upstream, 5, ENVELOPE), modernHeaders('prompts/get', `${upstream}__plain`)) })
  }
  const finder = await rawInitialize(`${gw.url}/finder`)
  answers.push({
    where: 'POST /mcp/finder call_tool',
    ...await post(`${gw.url}/finder`, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"remote__echo","arguments":{"text":"x","nested":${deep}}}}}`, { 'mcp-session-id': finder.sessionId })
  })
  for (const { where, body } of answers) {
    assert.equal(body.error?.code, -32600, `${where}: -32600, got ${JSON.stringify(body).slice(0, 300)}`)
    assert.match(body.error?.message ?? '', /nested too deeply to be forwarded/, where)
  }
  const { ws, inbox } = await openSocket(t, gw)
  ws.send(callDeep('remote', 8))
  ws.send(promptDeep('local', 9))
  for (const id of [8, 9]) {
    const answer = await answerOn(inbox, m => m.id === id, `the WebSocket answer ${id}`)
    assert.equal(answer.error?.code, -32600)
  }
  assert.equal(ws.readyState, WebSocket.OPEN)

  await assertUntouched(s, inFlight)
})
