// Issue 29: the relayed bytes survive every other way an answer travels: a POST stream dropped and
// resumed with Last-Event-ID (the answer kept in the event store and replayed), the legacy HTTP+SSE
// transport, a WebSocket carrying a large result or a cancellation, and many calls at once on one
// stdio upstream, each answered under its own caller's id.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { IDS, RESULTS, largeResult } from '../fixtures/raw-bytes-results.ts'
import type { EmitLine } from '../fixtures/raw-bytes-server.ts'
import { answer, assertRelayed, emitCall, jsonBytes, progressLine, startRelay, webSocketSession } from '../helpers/byte-relay.ts'
import { rawInitialize, rawPost, waitFor } from '../helpers/start-gateway.ts'

interface Event { id?: string, event?: string, data: string }

/** Reads SSE events one at a time, as the client's bytes decoded (valid UTF-8 decodes and encodes back exactly). */
class EventReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  private readonly decoder = new TextDecoder()
  private buffer = ''
  constructor (res: Response) { this.reader = (res.body as ReadableStream<Uint8Array>).getReader() }

  async next (): Promise<Event | undefined> {
    for (;;) {
      const end = this.buffer.indexOf('\n\n')
      if (end !== -1) {
        const block = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 2)
        const lines = block.split('\n').filter(l => !l.startsWith(':'))
        if (lines.length === 0) continue
        const field = (name: string): string | undefined => lines.find(l => l.startsWith(`${name}:`))?.slice(name.length + 1).replace(/^ /, '')
        const data = lines.filter(l => l.startsWith('data:')).map(l => l.slice(5).replace(/^ /, '')).join('\n')
        return { id: field('id'), event: field('event'), data }
      }
      const { value, done } = await this.reader.read()
      if (done) return undefined
      this.buffer += this.decoder.decode(value, { stream: true })
    }
  }

  /** Events until one carries an answer (an id and a result or error), that one included. */
  async untilAnswer (): Promise<Event[]> {
    const events: Event[] = []
    for (let e = await this.next(); e !== undefined; e = await this.next()) {
      events.push(e)
      if (/^\{"jsonrpc":"2\.0","id":/.test(e.data)) break
    }
    return events
  }
}

/** Posts a call whose answer comes 300 ms after its progress, and drops the stream once the progress is read: answers the progress event's id. */
async function dropAfterProgress (url: string, sessionId: string, idText: string, result: string): Promise<string> {
  const drop = new AbortController()
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
    body: emitCall(idText, { result, lines: [progressLine(1), 300, answer(result.length > 10_000 ? [4_093] : 'tricky')] }, { progressToken: 'r' }),
    signal: drop.signal
  })
  const first = new EventReader(res)
  for (let e = await first.next(); e !== undefined; e = await first.next()) {
    if (!e.data.includes('notifications/progress')) continue
    assert.ok(e.id !== undefined, 'a progress event with an id')
    drop.abort()
    return e.id
  }
  throw new Error('no progress event')
}

async function resume (url: string, sessionId: string, lastEventId: string): Promise<Event[]> {
  return await new EventReader(await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId, 'last-event-id': lastEventId } })).untilAnswer()
}

test('a POST stream dropped and resumed with Last-Event-ID before the answer comes carries the result byte for byte', async (t) => {
  const { gw, sessionId, post } = await startRelay(t)
  for (const [idText, result] of [['"resume é"', RESULTS.numbers as string], ['77', largeResult(200_000)]] as const) {
    const progressId = await dropAfterProgress(gw.url, sessionId, idText, result)
    const resumed = await resume(gw.url, sessionId, progressId)
    assertRelayed(resumed.at(-1)?.data ?? '', idText, result, 'resumed')
  }
  assertRelayed(await jsonBytes(await post(emitCall('1', { result: RESULTS.plain, lines: [answer()] }))), '1', RESULTS.plain as string)
})

test('an answer kept for a dropped stream and replayed on resumption is still the upstream\'s bytes', async (t) => {
  const { gw, sessionId } = await startRelay(t)
  const result = RESULTS.numbers as string
  const progressId = await dropAfterProgress(gw.url, sessionId, '"kept"', result)
  await waitFor(() => gw.gateway.pool.status()[0]?.inFlight === 0, 'the answer to arrive while the client is away')
  assertRelayed((await resume(gw.url, sessionId, progressId)).at(-1)?.data ?? '', '"kept"', result, 'resumed after the answer was kept')
  assertRelayed((await resume(gw.url, sessionId, progressId.replace(/\.\d+$/, '.0'))).at(-1)?.data ?? '', '"kept"', result, 'replayed from the start')
})

test('the legacy HTTP+SSE transport (2024-11-05) carries the result byte for byte as a message event, after the call\'s progress', async (t) => {
  const { gw } = await startRelay(t)
  const stop = new AbortController()
  t.after(() => { stop.abort() })
  const events = new EventReader(await fetch(`${gw.baseUrl}/sse`, { headers: { accept: 'text/event-stream' }, signal: stop.signal }))
  const endpoint = (await events.next())?.data ?? ''
  assert.match(endpoint, /^\/messages\?sessionId=/)
  const send = async (body: string): Promise<void> => {
    const res = await fetch(`${gw.baseUrl}${endpoint}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    assert.equal(res.status, 202)
  }
  await send(JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } } }))
  await events.untilAnswer()
  await send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  for (const [i, name] of ['escapes', 'multibyte', 'numbers', 'embedded'].entries()) {
    const idText = IDS[i * 4] as string
    const result = RESULTS[name] as string
    await send(emitCall(idText, { result, lines: [progressLine(1), answer('tricky')] }, { progressToken: name }))
    const got = await events.untilAnswer()
    assert.deepEqual(got.map(e => e.event), ['message', 'message'], name)
    assert.match(got[0]?.data ?? '', /notifications\/progress/)
    assertRelayed(got[1]?.data ?? '', idText, result, `legacy SSE, ${name}`)
  }
})

test('forty calls at once from two sessions on one stdio upstream, answered in a scrambled order and cut in pieces, each get their own result under their own id', async (t) => {
  const { gw, post } = await startRelay(t)
  const other = await rawInitialize(gw.url)
  const names = Object.keys(RESULTS)
  const splits: Array<EmitLine['split']> = ['tricky', [1, 3], undefined, [64], 'tricky']
  const calls = Array.from({ length: 40 }, (_v, i) => {
    const result = RESULTS[names[i % names.length] as string] as string
    // Ids repeat across the two sessions; each session's own ids are distinct.
    const idText = i % 2 === 0 ? String(i) : `"${i} ü"`
    const body = emitCall(idText, { result, lines: [(i * 37) % 150, answer(splits[i % splits.length], { pauseMs: 0 })] })
    const session = i % 4 < 2 ? undefined : other.sessionId
    const sent = session === undefined ? post(body) : rawPost(gw.url, body, { 'mcp-session-id': session })
    return { idText, result, answer: sent.then(jsonBytes) }
  })
  for (const call of calls) assertRelayed(await call.answer, call.idText, call.result, 'one of forty at once')
})

test('over WebSocket, a 4 MB result is one frame of the upstream\'s bytes; a call cancelled mid-line gets no frame and the next one does', async (t) => {
  const relay = await startRelay(t)
  const { socket, frames } = await webSocketSession(t, relay.gw, { maxPayload: 64 * 1024 * 1024 })
  const frameFor = async (idText: string): Promise<Buffer> => await waitFor(() => frames.find(f => f.subarray(0, 200).toString().startsWith(`{"jsonrpc":"2.0","id":${idText},`)), `the answer to ${idText}`)

  socket.send(emitCall('"big"', { largeBytes: 4_000_000, lines: [answer([65_537, 1, 4_093], { pauseMs: 0 })] }))
  assertRelayed(await frameFor('"big"'), '"big"', largeResult(4_000_000), 'a 4 MB frame')

  frames.length = 0
  socket.send(emitCall('"cancelled"', { tag: 'ws', largeBytes: 3_000_000, lines: [progressLine(1), answer([32_768], { pauseMs: 10 })] }, { progressToken: 'ws' }))
  await waitFor(() => frames.some(f => f.includes('notifications/progress')), 'the progress before the slow line')
  socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'cancelled', reason: 'enough' } }))
  socket.send(emitCall('"after"', { result: RESULTS.escapes, lines: [answer('tricky')] }))
  assertRelayed(await frameFor('"after"'), '"after"', RESULTS.escapes as string, 'the next call')
  const seen = await jsonBytes(await relay.post(JSON.stringify({ jsonrpc: '2.0', id: 'seen', method: 'tools/call', params: { name: 'raw__seen', arguments: {} } })))
  assert.deepEqual((JSON.parse(seen.toString('utf8')) as { result: { structuredContent: { cancelled: unknown } } }).result.structuredContent.cancelled, [{ tag: 'ws', midLine: true }])
  assert.ok(!frames.some(f => f.subarray(0, 60).toString().includes('"cancelled"')), 'no answer to the cancelled call')
})
