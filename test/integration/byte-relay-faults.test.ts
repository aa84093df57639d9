// Issue 29: what the byte relay does when the upstream's answer is wrong or the call ends before the
// answer is whole. A malformed answer fails its own call cleanly and the shared stdio upstream goes
// on serving everyone else; a call cancelled (or timed out) while its result is half written is
// cancelled upstream, the rest of the line is dropped, and the next call's bytes come through.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RESULTS } from '../fixtures/raw-bytes-results.ts'
import type { EmitPlan } from '../fixtures/raw-bytes-server.ts'
import { answer, assertRelayed, emitCall, jsonBytes, progressLine, startRelay, type Relay } from '../helpers/byte-relay.ts'
import { connectClient, rawInitialize, rawPost, waitFor } from '../helpers/start-gateway.ts'

const GOOD = RESULTS.multibyte as string
const TIMEOUT_MS = 1_500

interface Answer { id: unknown, result?: { isError?: boolean, content?: Array<{ text?: string }>, _meta?: Record<string, { code?: string }> }, error?: unknown }

/** The cancellations the fixture was told of: the tag of each call, and whether its line was half written. */
async function cancelsSeen (relay: Relay): Promise<Array<{ tag: string, midLine: boolean }>> {
  const res = await relay.post(JSON.stringify({ jsonrpc: '2.0', id: 'seen', method: 'tools/call', params: { name: 'raw__seen', arguments: {} } }))
  return ((await res.json()) as { result: { structuredContent: { cancelled: Array<{ tag: string, midLine: boolean }> } } }).result.structuredContent.cancelled
}

test('a malformed answer fails only its own call, with a clean error; other sessions\' calls on the same upstream are served meanwhile and after', async (t) => {
  // Fifteen timeouts in a row would open the circuit breaker, which is not what this test is about.
  const relay = await startRelay(t, { timeoutMs: TIMEOUT_MS, upstream: { circuitBreaker: { enabled: false } } })
  const malformed = [
    '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[}',
    'not JSON at all ü 😀',
    '{"jsonrpc":"2.0","id":__ID__,"result":[{"type":"text","text":"an array"}]}',
    '{"jsonrpc":"2.0","id":__ID__,"result":null}',
    '{"jsonrpc":"2.0","id":__ID__,"result":42}',
    '{"jsonrpc":"2.0","id":__ID__,"result":"a string"}',
    '{"jsonrpc":"2.0","result":__RESULT__}',
    '{"jsonrpc":"2.0","id":null,"result":__RESULT__}',
    '{"jsonrpc":"1.0","id":__ID__,"result":__RESULT__}',
    '{"id":__ID__,"result":__RESULT__}',
    '{"jsonrpc":"2.0","id":__ID__,"id":987654,"result":__RESULT__}',
    '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"bad \\x escape"}]}}',
    '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"raw \u0001 control"}]}}',
    '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[]}} trailing',
    '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"truncated'
  ]
  const other = await rawInitialize(relay.gw.url)
  const bad = Promise.all(malformed.map(async (text, i) => {
    const res = await relay.post(emitCall(String(100 + i), { result: GOOD, lines: [{ text, split: 'tricky' }] }))
    return { text, body: await res.json() as Answer }
  }))
  // While the malformed calls wait for answers that never come, another session's calls are served byte for byte.
  for (let i = 0; i < 5; i++) {
    const body = await jsonBytes(await rawPost(relay.gw.url, emitCall(`"other ${i}"`, { result: GOOD, lines: [answer('tricky')] }), { 'mcp-session-id': other.sessionId }))
    assertRelayed(body, `"other ${i}"`, GOOD, 'another session, meanwhile')
  }
  for (const [i, { text, body }] of (await bad).entries()) {
    assert.equal(body.id, 100 + i, text)
    assert.equal(body.result?.isError, true, `${text}: ${JSON.stringify(body)}`)
    assert.equal(body.result?._meta?.['switchboard/error']?.code, 'SB_ERR_UPSTREAM_TIMEOUT', text)
    assert.doesNotMatch(JSON.stringify(body), /é ß Ω/, `${text}: nothing of the malformed answer reached the client`)
  }
  assertRelayed(await jsonBytes(await relay.post(emitCall('200', { result: GOOD, lines: [answer()] }))), '200', GOOD, 'the same session, after')
  assert.equal(relay.gw.gateway.pool.status()[0]?.state, 'ready')
})

test('a truncated line followed by the whole answer: the whole one is relayed byte for byte', async (t) => {
  const relay = await startRelay(t, { timeoutMs: TIMEOUT_MS })
  const truncated = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"cut off here é'
  const body = await jsonBytes(await relay.post(emitCall('"after a cut"', { result: GOOD, lines: [{ text: truncated, split: 'tricky' }, answer('tricky')] })))
  assertRelayed(body, '"after a cut"', GOOD)
})

test('repeated members: the last one counts, as in JSON.parse, for the id and for the result; an answer with both result and error reaches the client as one of them', async (t) => {
  const relay = await startRelay(t, { timeoutMs: TIMEOUT_MS })
  const lastId = await jsonBytes(await relay.post(emitCall('1', { result: GOOD, lines: [{ text: '{"jsonrpc":"2.0","id":987654,"id":__ID__,"result":{"content":[{"type":"text","text":"first"}]},"result":__RESULT__}' }] })))
  assertRelayed(lastId, '1', GOOD, 'repeated id and result')
  const duplicates = RESULTS.duplicates as string
  const inside = await jsonBytes(await relay.post(emitCall('2', { result: duplicates, lines: [answer()] })))
  assertRelayed(inside, '2', duplicates, 'repeated members inside the result')
  assert.equal((JSON.parse(inside.toString('utf8')) as Answer).result?.content?.[0]?.text, 'second')
  const both = await relay.post(emitCall('3', { result: GOOD, lines: [{ text: '{"jsonrpc":"2.0","id":__ID__,"error":{"code":-32000,"message":"and an error"},"result":__RESULT__}' }] }))
  const text = Buffer.from(await both.arrayBuffer())
  const parsed = JSON.parse(text.toString('utf8')) as Answer
  assert.equal(parsed.id, 3)
  assert.ok(('result' in parsed) !== ('error' in parsed), `exactly one of result and error: ${text.toString('utf8').slice(0, 200)}`)
  if ('result' in parsed) assertRelayed(text, '3', GOOD, 'result and error')
})

test('the SDK client cancels while a 3 MB result is half written: it gets its cancellation, the upstream is told mid-line, the rest is dropped quietly, the next call is relayed whole', async (t) => {
  const relay = await startRelay(t)
  const client = await connectClient(t, relay.gw.url)
  const abort = new AbortController()
  const slow = { tag: 'sdk', largeBytes: 3_000_000, lines: [progressLine(1), answer([32_768], { pauseMs: 10 })] }
  const call = client.callTool({ name: 'raw__emit', arguments: { plan: slow } }, { signal: abort.signal, onprogress: () => { abort.abort(new Error('enough')) } })
  await assert.rejects(call)
  const cancels = await waitFor(async () => { const seen = await cancelsSeen(relay); return seen.length > 0 && seen }, 'the upstream told of the cancellation')
  assert.deepEqual(cancels, [{ tag: 'sdk', midLine: true }])
  const next = await client.callTool({ name: 'raw__emit', arguments: { plan: { result: GOOD, lines: [answer('tricky')] } } })
  assert.deepEqual(next, JSON.parse(GOOD))
  assertRelayed(await jsonBytes(await relay.post(emitCall('"next"', { result: RESULTS.escapes, lines: [answer('tricky')] }))), '"next"', RESULTS.escapes as string)
  assert.deepEqual(relay.gw.logs.filter(l => l.msg === 'upstream protocol error'), [], 'the late answer was valid, only unwanted')
})

test('a raw client cancels mid-line and the upstream stops writing: the truncated line harms no one, and the call times out upstream-side likewise', async (t) => {
  const relay = await startRelay(t, { timeoutMs: TIMEOUT_MS })
  const slow = (tag: string): EmitPlan => ({ tag, largeBytes: 10_000_000, lines: [progressLine(1), answer([32_768], { pauseMs: 5, onCancel: 'stop' })] })
  const res = await relay.post(emitCall('"cancel me"', slow('raw'), { progressToken: 'p' }))
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  let seen = ''
  while (!seen.includes('notifications/progress')) {
    const { value, done } = await reader.read()
    if (done) break
    seen += Buffer.from(value).toString('utf8')
  }
  await relay.post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'cancel me', reason: 'changed my mind' } }))
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    seen += Buffer.from(value).toString('utf8')
  }
  assert.doesNotMatch(seen, /"result"/, 'no result after the cancellation')
  assert.deepEqual(await waitFor(async () => { const c = await cancelsSeen(relay); return c.length > 0 && c }, 'the cancellation upstream'), [{ tag: 'raw', midLine: true }])
  assertRelayed(await jsonBytes(await relay.post(emitCall('1', { result: GOOD, lines: [answer('tricky')] }))), '1', GOOD, 'after a cut line')

  // The gateway's own timeout while the line is half written: the same, and the client is told why.
  const late = await relay.post(emitCall('2', { ...slow('timeout'), largeBytes: 20_000_000 }))
  const body = await late.json() as Answer
  assert.equal(body.result?._meta?.['switchboard/error']?.code, 'SB_ERR_UPSTREAM_TIMEOUT')
  assert.deepEqual((await waitFor(async () => { const c = await cancelsSeen(relay); return c.length > 1 && c }, 'the timeout upstream'))[1], { tag: 'timeout', midLine: true })
  assertRelayed(await jsonBytes(await relay.post(emitCall('3', { result: GOOD, lines: [answer('tricky')] }))), '3', GOOD, 'after a timed-out line')
})
