// Issue 29: the relayed result goes back under the client's own id, of any type, on every downstream
// transport: Streamable HTTP (JSON and SSE answers), WebSocket, the stateless 2026-07-28 era, and
// to the SDK client with its progress and logs before the result. The gateway gives the upstream
// ids of its own; these tests look only at what the clients get.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { IDS, RESULTS } from '../fixtures/raw-bytes-results.ts'
import { answer, assertRelayed, emitCall, jsonBytes, logLine, progressLine, sseMessages, startRelay, webSocketSession } from '../helpers/byte-relay.ts'
import { connectClient, rawInitialize, rawPost, waitFor } from '../helpers/start-gateway.ts'
import { MODERN } from '../helpers/modern-era.ts'

const RESULT = RESULTS.escapes as string

test('ids of every type come back as the client wrote them, in a JSON answer and in an SSE event', async (t) => {
  const { post } = await startRelay(t)
  for (const idText of IDS) {
    assertRelayed(await jsonBytes(await post(emitCall(idText, { result: RESULT, lines: [answer()] }))), idText, RESULT, 'JSON')
    const messages = await sseMessages(await post(emitCall(idText, { result: RESULT, lines: [progressLine(1), answer()] }, { progressToken: JSON.parse(idText) as string | number })))
    assert.ok(Object.is((JSON.parse(messages[0] as string) as { params: { progressToken: unknown } }).params.progressToken, JSON.parse(idText)), `the progress token ${idText}`)
    assertRelayed(messages[1] as string, idText, RESULT, 'SSE')
  }
})

test('the same id in two sessions, and 1 beside "1" in one session, each get their own result when the upstream answers in reverse order', async (t) => {
  const { gw, post } = await startRelay(t)
  const other = await rawInitialize(gw.url)
  const postOther = async (body: string): Promise<Response> => await rawPost(gw.url, body, { 'mcp-session-id': other.sessionId })
  const slow = (name: string): string => RESULTS[name] as string
  // The first call's answer waits 300 ms, so the second call's is written first.
  const [a, b] = await Promise.all([
    post(emitCall('1', { result: slow('image'), lines: [300, answer('tricky')] })).then(jsonBytes),
    postOther(emitCall('1', { result: slow('audio'), lines: [answer('tricky')] })).then(jsonBytes)
  ])
  assertRelayed(a, '1', slow('image'), 'session A')
  assertRelayed(b, '1', slow('audio'), 'session B')
  const [n, s] = await Promise.all([
    post(emitCall('1', { result: slow('multibyte'), lines: [300, answer()] })).then(jsonBytes),
    post(emitCall('"1"', { result: slow('numbers'), lines: [answer()] })).then(jsonBytes)
  ])
  assertRelayed(n, '1', slow('multibyte'), 'number 1')
  assertRelayed(s, '"1"', slow('numbers'), 'string "1"')
})

test('the SDK client gets its progress and the upstream\'s logs before the result, in the upstream\'s order, and the result it meant', async (t) => {
  const { gw } = await startRelay(t)
  const client = await connectClient(t, gw.url)
  const seen: string[] = []
  client.setNotificationHandler('notifications/message', (n) => { seen.push(`log ${String(n.params.data)}`) })
  const lines = [progressLine(1), logLine(1), progressLine(2), { ...logLine(2), split: 'tricky' as const }, progressLine(3), answer('tricky')]
  for (const name of ['multibyte', 'structured', 'isError']) {
    seen.length = 0
    const result = await client.callTool({ name: 'raw__emit', arguments: { plan: { result: RESULTS[name], lines } } }, { onprogress: (p) => { seen.push(`progress ${p.progress} ${String(p.message)}`) } })
    seen.push('result')
    assert.deepEqual(seen, ['progress 1 step 1 é', 'log log 1 😀', 'progress 2 step 2 é', 'log log 2 😀', 'progress 3 step 3 é', 'result'], name)
    assert.deepEqual(result, JSON.parse(RESULTS[name] as string), name)
  }
})

test('over WebSocket, each frame is the upstream\'s result under the client\'s id, after the call\'s progress and logs', async (t) => {
  const { gw } = await startRelay(t)
  const { socket, frames } = await webSocketSession(t, gw)
  for (const [i, idText] of IDS.entries()) {
    const result = Object.values(RESULTS)[i % Object.keys(RESULTS).length] as string
    frames.length = 0
    socket.send(emitCall(idText, { result, lines: [progressLine(1), logLine(1), answer('tricky')] }, { progressToken: i }))
    await waitFor(() => frames.some(f => f.includes('"result":')), `the answer to ${idText}`)
    const texts = frames.map(f => f.toString('utf8'))
    assert.deepEqual(texts.slice(0, 2).map(f => (JSON.parse(f) as { method: string }).method), ['notifications/progress', 'notifications/message'], idText)
    assert.equal(frames.length, 3)
    assertRelayed(frames[2] as Buffer, idText, result, 'WebSocket')
  }
})

test('a 2026-07-28 client without a session gets the upstream\'s result, as the same JSON value, under its own id of any type', async (t) => {
  const { gw } = await startRelay(t)
  const sessions = gw.gateway.sessions.size
  const names = Object.keys(RESULTS).filter(name => name !== 'numbers') // -0 and 1e400 survive only as text: see the stdio tests
  for (const [i, idText] of IDS.entries()) {
    const name = names[i % names.length] as string
    const params = { name: 'raw__emit', arguments: { plan: { result: RESULTS[name], lines: [answer('tricky')] } }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } }
    const res = await rawPost(gw.url, `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":${JSON.stringify(params)}}`, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'raw__emit' })
    assert.equal(res.status, 200, name)
    const body = await res.json() as { id: unknown, result: Record<string, unknown> }
    assert.ok(Object.is(body.id, JSON.parse(idText)), `${name}: id ${idText} came back as ${JSON.stringify(body.id)}`)
    const { resultType, _meta: meta, ...rest } = body.result
    const { _meta: upstreamMeta, ...expected } = JSON.parse(RESULTS[name] as string) as Record<string, unknown>
    assert.equal(resultType, 'complete')
    assert.deepEqual(rest, expected, name)
    assert.deepEqual({ ...(meta as object), 'io.modelcontextprotocol/serverInfo': undefined }, { ...(upstreamMeta as object | undefined), 'io.modelcontextprotocol/serverInfo': undefined }, `${name}: the upstream's _meta kept`)
  }
  assert.equal(gw.gateway.sessions.size, sessions, 'no session opened for them')
})

test('a 2026-07-28 client gets the members it did not need changed as the upstream wrote them', async (t) => {
  const { gw } = await startRelay(t)
  const result = RESULTS.numbers as string
  const params = { name: 'raw__emit', arguments: { plan: { result, lines: [answer()] } }, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } }
  const res = await rawPost(gw.url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }), { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'raw__emit' })
  const text = await res.text()
  const structured = result.slice(result.indexOf('"structuredContent":'), -1)
  assert.ok(text.includes(structured), `the upstream's ${structured.slice(0, 80)}… in ${text.slice(0, 300)}`)
  assert.ok(text.includes('"n":1.0,"m":-0,"big":1e400'), text.slice(0, 300))
})
