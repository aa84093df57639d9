// Tool results relayed as the upstream wrote them (src/protocol/raw-result.ts): what the client
// gets is the upstream's text with the client's id spliced in, on every downstream transport; the
// fuzzing upstream writes each answer exactly as the test gives it.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { WebSocket } from 'ws'
import { startFuzzingHttpUpstream } from '../fixtures/fuzzing-upstream.ts'
import { rawInitialize, rawPost, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'
import { readEvents } from '../helpers/sse-events.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/fuzzing-upstream.ts', import.meta.url))
const TIMEOUT_MS = 1_500

/** Results as an upstream may write them: every content type, structuredContent, _meta, escapes, multi-byte text, spaces between tokens. */
const RESULTS = [
  '{"content":[{"type":"text","text":"plain"}]}',
  '{"content":[{"type":"text","text":"\\u00e9t\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u2028"}],"isError":false}',
  '{"content":[{"type":"text","text":"été 😀 日本語 ⅷ"}]}',
  '{ "content" : [ { "type" : "image" , "data" : "iVBORw0KGgo=" , "mimeType" : "image/png" } ] , "isError" : true }',
  '{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///a","name":"a"},{"type":"resource","resource":{"uri":"x://y","text":"t","mimeType":"text/plain"}}]}',
  '{"content":[],"structuredContent":{"n":1.50,"e":1E+2,"big":12345678901234567890,"nested":{"a":[null,true,false]}},"_meta":{"io.example/x":[1],"k":"v"}}'
]

/** Large enough to be written as one buffer (wire.ts messageBody). */
const LARGE = `{"content":[{"type":"text","text":"${'x'.repeat(70_000)} été 😀 \\u00e9 日本"}],"structuredContent":{"n":1}}`

/** Client ids as written on the wire, and what they are once read. */
const IDS = ['0', '7', '-3', '9007199254740993', '1.5', '"abc"', '""', '"with \\"quotes\\" \\\\ and \\n"', '"ünï©ødé 😀"', '"\\u00e9"']

async function liar (t: Parameters<typeof startGateway>[0]): Promise<{ gw: RunningGateway, sessionId: string }> {
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'liar', transport: 'stdio', command: process.execPath, args: ['--import', import.meta.resolve('tsx'), FIXTURE], timeoutMs: TIMEOUT_MS }]
  }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  return { gw, sessionId }
}

function callBody (idText: string, lines: Array<string | number>, meta?: Record<string, unknown>, http?: 'json' | 'sse'): string {
  const params = { name: 'liar__lie', arguments: { plan: http === undefined ? { lines } : { lines, http } }, ...(meta === undefined ? {} : { _meta: meta }) }
  return `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":${JSON.stringify(params)}}`
}

const answerLine = (result: string): string => `{"jsonrpc":"2.0","id":__ID__,"result":${result}}`

test('a tool result reaches the client byte for byte as the upstream wrote it, under the client\'s id of any type (JSON answer)', async (t) => {
  const { gw, sessionId } = await liar(t)
  for (const [i, result] of RESULTS.entries()) {
    for (const idText of IDS) {
      const res = await rawPost(gw.url, callBody(idText, [answerLine(result)]), { 'mcp-session-id': sessionId })
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /application\/json/)
      const body = await res.text()
      assert.equal(body, `{"jsonrpc":"2.0","id":${JSON.stringify(JSON.parse(idText))},"result":${result}}`, `result ${i}, id ${idText}`)
    }
  }
})

test('progress and logs sent during a call reach the client before its result and in the upstream\'s order; the result stays byte for byte (SSE answer)', async (t) => {
  const { gw, sessionId } = await liar(t)
  const result = RESULTS[5] as string
  const progress = (n: number): string => `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":__ID__,"progress":${n},"total":3}}`
  const log = (n: number): string => `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"log ${n}"}}`
  const lines = [progress(1), log(1), progress(2), log(2), progress(3), answerLine(result)]
  for (const idText of ['5', '"ü-id"']) {
    const res = await rawPost(gw.url, callBody(idText, lines, { progressToken: 'client-token' }), { 'mcp-session-id': sessionId })
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/)
    const events = await readEvents(res, evs => evs.some(e => e.data.includes('"result"')))
    // An event without data (the stream's priming event, which only carries an id) is no message.
    const seen = events.filter(e => e.data !== '').map((e) => {
      const m = JSON.parse(e.data) as { method?: string, params?: { progress?: number, progressToken?: unknown, data?: string } }
      if (m.method === 'notifications/progress') return `progress ${m.params?.progress} ${String(m.params?.progressToken)}`
      if (m.method === 'notifications/message') return m.params?.data ?? ''
      return 'result'
    })
    assert.deepEqual(seen, ['progress 1 client-token', 'log 1', 'progress 2 client-token', 'log 2', 'progress 3 client-token', 'result'])
    assert.equal(events.at(-1)?.data, `{"jsonrpc":"2.0","id":${JSON.stringify(JSON.parse(idText))},"result":${result}}`)
  }
})

test('over WebSocket too, the result is the upstream\'s text under the client\'s id', async (t) => {
  const { gw } = await liar(t)
  const socket = new WebSocket(gw.url.replace(/^http/, 'ws'), 'mcp')
  t.after(() => { socket.terminate() })
  const frames: string[] = []
  socket.on('message', (data: Buffer, isBinary: boolean) => { frames.push(isBinary ? 'binary frame' : data.toString('utf8')) })
  await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject) })
  socket.send(JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ws', version: '1' } } }))
  await waitFor(() => frames.length > 0, 'initialize answer')
  socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  for (const [i, result] of [...RESULTS, LARGE].entries()) {
    socket.send(callBody(`"ws-${i}"`, [answerLine(result)]))
    const frame = await waitFor(() => frames.find(f => f.includes(`"ws-${i}"`)), `answer ${i}`)
    assert.equal(frame, `{"jsonrpc":"2.0","id":"ws-${i}","result":${result}}`)
  }
})

test('a malformed answer is never relayed: the call ends with a clean timeout error, the upstream is told why in the log, the next call is served', async (t) => {
  const { gw, sessionId } = await liar(t)
  const malformed = [
    '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"x"},]}}',
    '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"unterminated}]}}',
    '{"jsonrpc":"2.0","id":__ID__,"result":"not an object"}',
    '{"jsonrpc":"1.0","id":__ID__,"result":{"content":[]}}'
  ]
  for (const [i, line] of malformed.entries()) {
    const res = await rawPost(gw.url, callBody(String(100 + i), [line]), { 'mcp-session-id': sessionId })
    const body = await res.json() as { id: number, result?: { isError?: boolean, _meta?: Record<string, { code?: string }> } }
    assert.equal(body.id, 100 + i)
    assert.equal(body.result?.isError, true, JSON.stringify(body))
    assert.equal(body.result?._meta?.['switchboard/error']?.code, 'SB_ERR_UPSTREAM_TIMEOUT')
  }
  await waitFor(() => gw.logs.filter(l => l.msg === 'upstream protocol error').length >= malformed.length, 'the protocol errors logged')
  const next = await rawPost(gw.url, callBody('200', [answerLine(RESULTS[0] as string)]), { 'mcp-session-id': sessionId })
  assert.equal(await next.text(), `{"jsonrpc":"2.0","id":200,"result":${RESULTS[0] as string}}`)
})

test('a call cancelled before its result arrives gets no answer; the late result is dropped and the session goes on', async (t) => {
  const { gw, sessionId } = await liar(t)
  // The upstream answers 100 ms after it is asked; the client cancels at once.
  const pending = rawPost(gw.url, callBody('1', [100, answerLine('{"content":[{"type":"text","text":"late"}]}')]), { 'mcp-session-id': sessionId })
  await waitFor(() => gw.gateway.pool.status()[0]?.inFlight === 1, 'the call in flight')
  await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'changed my mind' } }, { 'mcp-session-id': sessionId })
  const res = await pending
  const text = await res.text()
  assert.doesNotMatch(text, /late/)
  const next = await rawPost(gw.url, callBody('2', [answerLine(RESULTS[2] as string)]), { 'mcp-session-id': sessionId })
  assert.equal(await next.text(), `{"jsonrpc":"2.0","id":2,"result":${RESULTS[2] as string}}`)
})

test('from a Streamable HTTP upstream too, answering with a JSON body or on an SSE stream, the result is relayed byte for byte', async (t) => {
  const upstream = await startFuzzingHttpUpstream()
  t.after(upstream.close)
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'liar', transport: 'streamable-http', url: upstream.url, protocol: '2025-11-25' }] }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  for (const http of ['json', 'sse'] as const) {
    for (const [i, result] of RESULTS.entries()) {
      const idText = IDS[i % IDS.length] as string
      const res = await rawPost(gw.url, callBody(idText, [answerLine(result)], undefined, http), { 'mcp-session-id': sessionId })
      assert.equal(await res.text(), `{"jsonrpc":"2.0","id":${JSON.stringify(JSON.parse(idText))},"result":${result}}`, `${http}, result ${i}`)
    }
  }
})

test('a large result (written as one buffer) is byte for byte the upstream\'s too, as a JSON answer and as an SSE event', async (t) => {
  const { gw, sessionId } = await liar(t)
  const result = LARGE
  const expected = (idText: string): string => `{"jsonrpc":"2.0","id":${JSON.stringify(JSON.parse(idText))},"result":${result}}`
  for (const idText of ['11', '"ünï"']) {
    const json = await rawPost(gw.url, callBody(idText, [answerLine(result)]), { 'mcp-session-id': sessionId })
    assert.equal(Buffer.from(await json.arrayBuffer()).equals(Buffer.from(expected(idText))), true)
    const sse = await rawPost(gw.url, callBody(idText, ['{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":__ID__,"progress":1}}', answerLine(result)], { progressToken: 1 }), { 'mcp-session-id': sessionId })
    const events = await readEvents(sse, evs => evs.some(e => e.data.includes('"result"')))
    assert.equal(events.at(-1)?.data, expected(idText))
  }
})
