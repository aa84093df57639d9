// Issue 29: a tool result from a stdio upstream reaches the client as the bytes the upstream wrote,
// whatever its spelling and however the upstream cut its line into writes. Black box: a real
// child process (test/fixtures/raw-bytes-server.ts) writes the bytes, the test reads the HTTP body.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { RESULTS, largeResult } from '../fixtures/raw-bytes-results.ts'
import { ANSWER } from '../fixtures/raw-bytes-results.ts'
import { answer, assertRelayed, emitCall, jsonBytes, logLine, progressLine, sseMessages, startRelay } from '../helpers/byte-relay.ts'

const RESULT_NAMES = Object.keys(RESULTS)
const resultOf = (name: string): string => RESULTS[name] as string

test('every result, written as one line, is relayed byte for byte in a JSON answer', async (t) => {
  const { post } = await startRelay(t)
  for (const [i, name] of RESULT_NAMES.entries()) {
    const idText = String(i)
    const result = resultOf(name)
    const body = await jsonBytes(await post(emitCall(idText, { result, lines: [answer()] })))
    assertRelayed(body, idText, result, name)
    assert.deepEqual(JSON.parse(body.toString('utf8')).result, JSON.parse(result), `${name}: what a client reads is what the upstream meant`)
  }
})

test('every result is relayed byte for byte as an SSE event after the call\'s progress', async (t) => {
  const { post } = await startRelay(t)
  for (const name of RESULT_NAMES) {
    const result = resultOf(name)
    const idText = `"sse-${name}"`
    const messages = await sseMessages(await post(emitCall(idText, { result, lines: [progressLine(1), answer()] }, { progressToken: name })))
    assert.equal(messages.length, 2, name)
    assert.equal((JSON.parse(messages[0] as string) as { params: { progressToken: string } }).params.progressToken, name)
    assertRelayed(messages[1] as string, idText, result, name)
  }
})

test('a line cut into single bytes, or inside every multi-byte character and escape, is relayed whole', async (t) => {
  const { post } = await startRelay(t)
  const cases: Array<[string, 'bytes' | 'tricky' | number[]]> = [
    ['multibyte', 'bytes'], ['escapes', 'bytes'], ['multibyte', 'tricky'], ['escapes', 'tricky'],
    ['longString', 'tricky'], ['numbers', [1, 2, 3, 5, 7]], ['structured', [2]], ['whitespace', [3]], ['embedded', 'tricky']
  ]
  for (const [i, [name, split]] of cases.entries()) {
    const result = resultOf(name)
    const idText = i % 2 === 0 ? String(1000 + i) : `"cut ${i} \\u00e9 😀"`
    assertRelayed(await jsonBytes(await post(emitCall(idText, { result, lines: [answer(split)] }))), idText, result, `${name} cut ${JSON.stringify(split)}`)
  }
  // Pieces that end inside a character, with the progress before the answer cut the same way (SSE).
  const result = resultOf('multibyte')
  const messages = await sseMessages(await post(emitCall('7', { result, lines: [{ ...progressLine(1), split: 'tricky' }, answer('tricky')] }, { progressToken: 'é' })))
  assert.equal((JSON.parse(messages[0] as string) as { params: { message: string } }).params.message, 'step 1 é')
  assertRelayed(messages[1] as string, '7', result, 'multibyte over SSE')
})

test('several messages in one write, or a write cut at every byte including the newlines, are each read whole and in order', async (t) => {
  const { post } = await startRelay(t)
  const result = resultOf('multibyte')
  const together = [progressLine(1).text, logLine(1).text, ANSWER].join('\n')
  for (const [i, split] of [undefined, 'bytes' as const].entries()) {
    const messages = await sseMessages(await post(emitCall(String(i), { result, lines: [{ text: together, split }] }, { progressToken: 'one write' })))
    assert.deepEqual(messages.slice(0, 2).map(m => (JSON.parse(m) as { method: string }).method), ['notifications/progress', 'notifications/message'])
    assertRelayed(messages[2] as string, String(i), result, `three messages in one write, cut ${String(split)}`)
  }
})

test('the envelope may be spelled any valid way: members in any order, spaces and tabs, CRLF line ends, blank lines', async (t) => {
  const { post } = await startRelay(t)
  const result = resultOf('escapes')
  const envelopes = [
    '{"result":__RESULT__,"id":__ID__,"jsonrpc":"2.0"}',
    '{ "jsonrpc" : "2.0" ,\t"id" :\t__ID__ , "result" :   __RESULT__   }',
    '  \t{"jsonrpc":"2.0","id":__ID__,"result":__RESULT__}\t  ',
    '{"id":__ID__,"jsonrpc":"\\u0032.0","result":__RESULT__}'
  ]
  for (const [i, text] of envelopes.entries()) {
    assertRelayed(await jsonBytes(await post(emitCall(String(i), { result, lines: [{ text }] }))), String(i), result, text)
  }
  const crlf = await jsonBytes(await post(emitCall('"crlf"', { result, lines: [{ text: '', end: '\r\n' }, answer([5], { end: '\r\n' })] })))
  assertRelayed(crlf, '"crlf"', result, 'CRLF')
  const blank = await jsonBytes(await post(emitCall('"blank"', { result, lines: [{ text: '' }, { text: '   ' }, answer()] })))
  assertRelayed(blank, '"blank"', result, 'blank lines before')
})

test('a result with a line break as whitespace inside it is no raw text for SSE: it reaches the client as the same JSON value, and the stream stays whole', async (t) => {
  const { post } = await startRelay(t)
  const result = '{"content":[\r{"type":"text","text":"cr inside"}\r],\r"isError":false}'
  const json = await jsonBytes(await post(emitCall('1', { result, lines: [answer()] })))
  assert.deepEqual(JSON.parse(json.toString('utf8')), { jsonrpc: '2.0', id: 1, result: JSON.parse(result) })
  const messages = await sseMessages(await post(emitCall('2', { result, lines: [progressLine(1), answer()] }, { progressToken: 1 })))
  assert.deepEqual(JSON.parse(messages.at(-1) as string), { jsonrpc: '2.0', id: 2, result: JSON.parse(result) })
  // The next answer on the same stdio line reader is relayed raw again.
  assertRelayed(await jsonBytes(await post(emitCall('3', { result: resultOf('plain'), lines: [answer()] }))), '3', resultOf('plain'))
})

test('a line break in the envelope\'s whitespace, outside the result, leaves the result\'s bytes alone', async (t) => {
  const { post } = await startRelay(t)
  const result = resultOf('numbers')
  assertRelayed(await jsonBytes(await post(emitCall('1', { result, lines: [{ text: '{"jsonrpc":"2.0",\r"id":__ID__,"result":__RESULT__\r}' }] }))), '1', result, 'CR in the envelope')
})

test('a 4 MB result written in odd-sized pieces is relayed byte for byte: JSON, SSE and a second one at once beside it', async (t) => {
  const { post } = await startRelay(t)
  const bytes = 4_000_000
  const result = largeResult(bytes)
  assert.ok(Buffer.byteLength(result) >= bytes)
  const split = [65_537, 4_093, 1, 131_071]
  const json = await jsonBytes(await post(emitCall('"big ü"', { largeBytes: bytes, lines: [answer(split, { pauseMs: 0 })] })))
  assertRelayed(json, '"big ü"', result, 'large JSON')
  const [sse, small] = await Promise.all([
    post(emitCall('9007199254740991', { largeBytes: bytes, lines: [progressLine(1), answer(split, { pauseMs: 0 })] }, { progressToken: 'big' })).then(sseMessages),
    post(emitCall('"small"', { result: resultOf('image'), lines: [answer()] })).then(jsonBytes)
  ])
  assertRelayed(sse.at(-1) as string, '9007199254740991', result, 'large SSE')
  assertRelayed(small, '"small"', resultOf('image'), 'a small answer beside the large one')
})
