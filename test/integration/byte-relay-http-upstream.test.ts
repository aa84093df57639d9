// Issue 29: from a Streamable HTTP upstream too (a node:http server writing exact bytes, in pieces),
// the result reaches the client byte for byte, whether the upstream answers with a JSON body or on
// an SSE stream, and whatever valid SSE spelling it uses.
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { ANSWER, IDS, RESULTS, largeResult } from '../fixtures/raw-bytes-results.ts'
import { type EmitLine, startRawBytesHttpUpstream } from '../fixtures/raw-bytes-server.ts'
import { assertRelayed, emitCall, jsonBytes, progressLine, sseMessages, startRelay, type Relay } from '../helpers/byte-relay.ts'
import { connectClient } from '../helpers/start-gateway.ts'

async function httpRelay (t: TestContext, options: { timeoutMs?: number } = {}): Promise<Relay> {
  const upstream = await startRawBytesHttpUpstream()
  t.after(upstream.close)
  return await startRelay(t, { ...options, url: upstream.url, upstream: { circuitBreaker: { enabled: false } } })
}

/** One SSE event of the upstream's: `fields` before the data line, `data` the message. */
const event = (data: string, options: { fields?: string, colon?: string, eol?: string, split?: EmitLine['split'] } = {}): EmitLine => {
  const eol = options.eol ?? '\n'
  return { text: `${options.fields ?? ''}data${options.colon ?? ': '}${data}`, end: eol + eol, split: options.split ?? 'tricky' }
}

test('a JSON body, written in pieces cut inside characters and escapes, is relayed byte for byte for every result and id', async (t) => {
  const { post } = await httpRelay(t)
  for (const [i, [name, result]] of Object.entries(RESULTS).entries()) {
    const idText = IDS[i % IDS.length] as string
    const body = await jsonBytes(await post(emitCall(idText, { http: 'json', result, lines: [{ text: ANSWER, split: 'tricky', end: '' }] })))
    assertRelayed(body, idText, result, `${name} from a JSON body`)
  }
})

test('an SSE answer is relayed byte for byte however the upstream spells its events: no space after the colon, CRLF, comments, event and id fields, progress first', async (t) => {
  const { post } = await httpRelay(t)
  const spellings: Array<[string, EmitLine[]]> = [
    ['plain', [event(ANSWER)]],
    ['no space', [event(ANSWER, { colon: ':' })]],
    ['CRLF', [event(ANSWER, { eol: '\r\n' })]],
    ['fields', [{ text: ': keep-alive', end: '\n\n' }, event(ANSWER, { fields: ': note\nevent: message\nid: 42\nretry: 1000\n' })]],
    ['single bytes', [event(ANSWER, { split: 'bytes' })]]
  ]
  for (const [i, [what, lines]] of spellings.entries()) {
    const result = what === 'single bytes' ? RESULTS.escapes as string : Object.values(RESULTS)[i] as string
    const body = await jsonBytes(await post(emitCall(`"${what}"`, { http: 'sse', result, lines })))
    assertRelayed(body, `"${what}"`, result, what)
  }
  const result = RESULTS.multibyte as string
  const progress = progressLine(1).text
  const messages = await sseMessages(await post(emitCall('5', { http: 'sse', result, lines: [event(progress), event(ANSWER, { split: [3] })] }, { progressToken: 'p' })))
  assert.equal((JSON.parse(messages[0] as string) as { params: { progressToken: string } }).params.progressToken, 'p')
  assertRelayed(messages[1] as string, '5', result, 'after progress, to an SSE client')
})

test('SSE events whose lines end in a lone CR (allowed by the SSE grammar) are read too', async (t) => {
  const { post } = await httpRelay(t, { timeoutMs: 3_000 })
  const result = RESULTS.plain as string
  assertRelayed(await jsonBytes(await post(emitCall('"CR"', { http: 'sse', result, lines: [event(ANSWER, { eol: '\r' })] }))), '"CR"', result, 'CR line ends')
})

test('a JSON body that ends with a newline is still the same bytes', async (t) => {
  const { post } = await httpRelay(t)
  const result = RESULTS.numbers as string
  const body = await jsonBytes(await post(emitCall('1', { http: 'json', result, lines: [{ text: ANSWER, end: '\n' }] })))
  assertRelayed(body, '1', result, 'a JSON body ending in a newline')
})

test('an answer with line breaks as whitespace (pretty-printed, or one data line per member) reaches the client as the same JSON value, and an SSE client\'s stream stays whole', async (t) => {
  const { post } = await httpRelay(t)
  const value = JSON.parse(RESULTS.structured as string) as unknown
  const pretty = JSON.stringify({ jsonrpc: '2.0', id: 0, result: value }, null, 2).replace('"id": 0', '"id": __ID__')
  const json = await jsonBytes(await post(emitCall('"pretty"', { http: 'json', lines: [{ text: pretty, split: [7] }] })))
  assert.deepEqual(JSON.parse(json.toString('utf8')), { jsonrpc: '2.0', id: 'pretty', result: value })
  const multiline = '{"jsonrpc":"2.0",\ndata: "id":__ID__,\ndata: "result":__RESULT__}'
  const messages = await sseMessages(await post(emitCall('7', { http: 'sse', result: RESULTS.structured, lines: [event(progressLine(1).text), event(multiline)] }, { progressToken: 1 })))
  assert.deepEqual(JSON.parse(messages[1] as string), { jsonrpc: '2.0', id: 7, result: value })
})

test('a 4 MB result is relayed byte for byte from a JSON body and from an SSE event, written in odd-sized pieces', async (t) => {
  const { post } = await httpRelay(t)
  const bytes = 4_000_000
  const result = largeResult(bytes)
  const split = [65_537, 4_093, 1, 131_071]
  const json = await jsonBytes(await post(emitCall('"big"', { http: 'json', largeBytes: bytes, lines: [{ text: ANSWER, split, pauseMs: 0, end: '' }] })))
  assertRelayed(json, '"big"', result, 'large JSON body')
  const sse = await sseMessages(await post(emitCall('-9007199254740991', { http: 'sse', largeBytes: bytes, lines: [event(progressLine(1).text), { ...event(ANSWER), split, pauseMs: 0 }] }, { progressToken: 0 })))
  assertRelayed(sse[1] as string, '-9007199254740991', result, 'large SSE event')
})

test('an SDK client cancels while the upstream\'s SSE event is half written: its cancellation, notifications/cancelled upstream, and the next call relayed whole', async (t) => {
  const relay = await httpRelay(t)
  const client = await connectClient(t, relay.gw.url)
  const abort = new AbortController()
  const plan = { tag: 'http', http: 'sse' as const, largeBytes: 3_000_000, lines: [event(progressLine(1).text), { ...event(ANSWER), split: [32_768], pauseMs: 10 }] }
  await assert.rejects(client.callTool({ name: 'raw__emit', arguments: { plan } }, { signal: abort.signal, onprogress: () => { abort.abort(new Error('enough')) } }))
  const seen = async (): Promise<Array<{ tag: string, midLine: boolean }>> => {
    const res = await relay.post(JSON.stringify({ jsonrpc: '2.0', id: 'seen', method: 'tools/call', params: { name: 'raw__seen', arguments: {} } }))
    return ((await res.json()) as { result: { structuredContent: { cancelled: Array<{ tag: string, midLine: boolean }> } } }).result.structuredContent.cancelled
  }
  const deadline = Date.now() + 10_000
  let cancels = await seen()
  while (cancels.length === 0 && Date.now() < deadline) { await new Promise(resolve => setTimeout(resolve, 50)); cancels = await seen() }
  assert.deepEqual(cancels, [{ tag: 'http', midLine: true }])
  const result = RESULTS.escapes as string
  assertRelayed(await jsonBytes(await relay.post(emitCall('"next"', { http: 'sse', result, lines: [event(ANSWER)] }))), '"next"', result, 'the next call')
})

test('a malformed answer (JSON body or SSE event) fails only its own call with a clean error; a slow call beside it and the next call are relayed byte for byte', async (t) => {
  const { gw, post } = await httpRelay(t, { timeoutMs: 1_500 })
  const malformed: Array<['json' | 'sse', string]> = [
    ['json', '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[}'],
    ['json', 'not JSON ü'],
    ['json', ''],
    ['json', '{"jsonrpc":"2.0","id":__ID__,"result":42}'],
    ['json', '{"jsonrpc":"2.0","result":__RESULT__}'],
    ['sse', 'data: {"jsonrpc":"2.0","id":__ID__,"result":{"content":[}\n\n'],
    ['sse', `data: ${ANSWER.replace('__RESULT__', '{"content":[{"type":"text","text":"cut off')}\n\n`],
    ['sse', 'data: {"jsonrpc":"2.0","id":__ID__,"result":"a string"}\n\n'],
    ['sse', ': the stream ends with no answer\n\n']
  ]
  const result = RESULTS.multibyte as string
  const slow = post(emitCall('"slow"', { http: 'sse', result, lines: [300, event(ANSWER)] })).then(jsonBytes)
  const bad = await Promise.all(malformed.map(async ([http, text], i) => {
    const res = await post(emitCall(String(i), { http, result, lines: [{ text, end: '', split: 'tricky' }] }))
    return { text, body: await res.json() as { id: unknown, result?: { isError?: boolean, _meta?: Record<string, { code?: string }> } } }
  }))
  for (const [i, { text, body }] of bad.entries()) {
    assert.equal(body.id, i, text)
    assert.equal(body.result?.isError, true, `${text}: ${JSON.stringify(body)}`)
    assert.match(body.result?._meta?.['switchboard/error']?.code ?? '', /^SB_ERR_UPSTREAM_/, text)
    assert.doesNotMatch(JSON.stringify(body), /é ß Ω/, `${text}: nothing of the malformed answer reached the client`)
  }
  assertRelayed(await slow, '"slow"', result, 'the slow call beside them')
  assertRelayed(await jsonBytes(await post(emitCall('"next"', { http: 'json', result, lines: [{ text: ANSWER, end: '' }] }))), '"next"', result, 'the next call')
  assert.equal(gw.gateway.pool.status()[0]?.reconnects, 0, 'the upstream connection was kept')
})
