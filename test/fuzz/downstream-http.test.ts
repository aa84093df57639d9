// Property-based fuzzing of the HTTP transports: a 2025-11-25 Streamable HTTP session and
// 2026-07-28 stateless POSTs, with valid messages for every method and mutations of them.
// Replay a failure: FUZZ_SEED=<seed> node --import tsx --test test/fuzz/downstream-http.test.ts
import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { rawInitialize, rawPost } from '../helpers/start-gateway.ts'
import { Tally, assertFuzz, assertResponse, checkPostAnswer, describeSent, fuzzSettings, isResponseLike, postAndRead, sameId } from './fuzz-support.ts'
import { FUZZ_UPSTREAMS, assertHealthyAndDrained, assertNoUpstreamLost, controlSession, errorLogs, reconnectsOf, startDownstreamFuzzGateway } from './fuzz-gateway.ts'
import { concurrentBatch, fuzzed, modernFuzzed, modernHeaders, sessionMessage } from './messages.ts'
import { mutate, toText } from './mutations.ts'

const FILE = 'test/fuzz/downstream-http.test.ts'
const RUNS = 250
const CONCURRENT_RUNS = 40
const CONCURRENT_CONTROL_EVERY = 5
const GET_RUNS = 100
const CONTROL_EVERY = 25
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

test('a Streamable HTTP session fed random and mutated messages answers every request with its id or a spec error, never 5xx, and stays usable for others', async (t) => {
  const gw = await startDownstreamFuzzGateway(t)
  const control = await controlSession(t, gw, ...Object.keys(FUZZ_UPSTREAMS).map(name => `${name}__echo`))
  const settings = fuzzSettings(t, FILE, RUNS)
  const { sessionId } = await rawInitialize(gw.url)
  assert.equal((await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sessionId })).status, 202)
  let run = 0
  const tally = new Tally()
  await assertFuzz(t, FILE, settings, fc.asyncProperty(fuzzed(sessionMessage), async (f) => {
    const text = toText(mutate(f.message, f.mutations), f.text)
    const sent = describeSent(text)
    const before = await reconnectsOf(gw)
    const answer = await postAndRead(gw.url, text, { ...HEADERS, 'mcp-session-id': sessionId }, sent.isRequest ? [sent.id] : [])
    tally.addAnswer(answer)
    checkPostAnswer(answer, sent, `POST ${text.slice(0, 400)}`)
    // Nothing a client POSTs ends its session.
    assert.notEqual(answer.status, 404, `the session was lost after POST ${text.slice(0, 400)}`)
    // Checked after each message, so a failure shrinks to the message that took an upstream away.
    assertNoUpstreamLost(gw, before, `POST ${text.slice(0, 400)}`)
    if (++run % CONTROL_EVERY === 0) await control()
  }))
  t.diagnostic(`answers: ${tally.toString()}`)
  await control()
  t.diagnostic(`error-level log lines: ${errorLogs(gw)}`)
  await assertHealthyAndDrained(gw, Object.keys(FUZZ_UPSTREAMS))
  assertNoUpstreamLost(gw)
})

test('2026-07-28 stateless POSTs with random and mutated bodies and headers get an answer with their id or a spec error, never 5xx', async (t) => {
  const gw = await startDownstreamFuzzGateway(t)
  const control = await controlSession(t, gw, ...Object.keys(FUZZ_UPSTREAMS).map(name => `${name}__echo`))
  const settings = fuzzSettings(t, FILE, RUNS)
  let run = 0
  const tally = new Tally()
  await assertFuzz(t, FILE, settings, fc.asyncProperty(modernFuzzed, async (f) => {
    const text = toText(mutate(f.message, f.mutations), f.text)
    const sent = describeSent(text)
    const headers = modernHeaders(f.message, f.headers)
    const before = await reconnectsOf(gw)
    // A listen's answer is a stream that stays open: its acknowledgement is the answer looked for.
    const acknowledged = (m: unknown): boolean => sent.method === 'subscriptions/listen' && (m as { method?: unknown }).method === 'notifications/subscriptions/acknowledged'
    const answer = await postAndRead(gw.url, text, headers, sent.isRequest ? [sent.id] : [], acknowledged)
    if (answer.status === 200 && answer.messages.some(acknowledged)) {
      tally.add('200 listen')
      return
    }
    tally.addAnswer(answer)
    checkPostAnswer(answer, sent, `POST ${JSON.stringify(headers)} ${text.slice(0, 400)}`)
    // Checked after each message, so a failure shrinks to the message that took an upstream away.
    assertNoUpstreamLost(gw, before, `POST ${text.slice(0, 400)}`)
    if (++run % CONTROL_EVERY === 0) await control()
  }))
  t.diagnostic(`answers: ${tally.toString()}`)
  await control()
  t.diagnostic(`error-level log lines: ${errorLogs(gw)}`)
  await assertHealthyAndDrained(gw, Object.keys(FUZZ_UPSTREAMS))
  assertNoUpstreamLost(gw)
})

test('concurrent requests of one session with colliding ids, cancellations and shared progress tokens each get an answer with their id, and none stays in flight', async (t) => {
  const gw = await startDownstreamFuzzGateway(t)
  const control = await controlSession(t, gw, ...Object.keys(FUZZ_UPSTREAMS).map(name => `${name}__echo`))
  const settings = fuzzSettings(t, FILE, CONCURRENT_RUNS)
  const { sessionId } = await rawInitialize(gw.url)
  assert.equal((await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, { 'mcp-session-id': sessionId })).status, 202)
  const tally = new Tally()
  let run = 0
  await assertFuzz(t, FILE, settings, fc.asyncProperty(concurrentBatch, async (batch) => {
    const cancelled = batch.map(({ message }) => message as { method?: string, params?: { requestId?: unknown } })
      .filter(m => m.method === 'notifications/cancelled').map(m => m.params?.requestId)
    await Promise.all(batch.map(async ({ message, delayMs }) => {
      await new Promise(resolve => setTimeout(resolve, delayMs))
      const text = JSON.stringify(message)
      const sent = describeSent(text)
      const answer = await postAndRead(gw.url, text, { ...HEADERS, 'mcp-session-id': sessionId }, sent.isRequest ? [sent.id] : [])
      // MCP: a cancelled request gets no response. Its SSE stream may end without one, but it must end.
      const withoutAnswer = answer.status === 200 && answer.contentType.includes('text/event-stream') && !answer.messages.some(isResponseLike)
      if (sent.isRequest && cancelled.some(id => sameId(id, sent.id)) && withoutAnswer) {
        tally.add('200 cancelled, stream ended')
        return
      }
      tally.addAnswer(answer)
      checkPostAnswer(answer, sent, `POST ${text} (batch ${JSON.stringify(batch)})`)
    }))
    if (++run % CONCURRENT_CONTROL_EVERY === 0) await control()
  }))
  t.diagnostic(`answers: ${tally.toString()}`)
  await control()
  t.diagnostic(`error-level log lines: ${errorLogs(gw)}`)
  await assertHealthyAndDrained(gw, Object.keys(FUZZ_UPSTREAMS))
  assertNoUpstreamLost(gw)
})

test('GET streams with random and mutated Last-Event-ID headers open a stream or get a 4xx JSON-RPC error, never 5xx, and leave nothing open', async (t) => {
  const gw = await startDownstreamFuzzGateway(t)
  const settings = fuzzSettings(t, FILE, GET_RUNS)
  const { sessionId } = await rawInitialize(gw.url)
  // A real event id to mutate: a call with progress is answered on an SSE stream whose events have ids.
  const call = await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'up__slow', arguments: { ms: 0, steps: 2 }, _meta: { progressToken: 'p' } } }, { 'mcp-session-id': sessionId })
  const eventId = /^id: ?(\S+)$/m.exec(await call.text())?.[1]
  assert.ok(eventId !== undefined, 'no event id on the SSE answer')
  const [streamId = '', seq = '0'] = eventId.split('.')
  const lastEventId = fc.oneof(
    fc.constant(eventId),
    fc.oneof(fc.integer(), fc.constantFrom('', '-1', '1.5', '1e3', '9007199254740993', '0x10', ' 1')).map(n => `${streamId}.${String(n)}`),
    fc.stringMatching(/^[\x21-\x7e]{0,40}$/).map(s => `${s}.${seq}`),
    fc.stringMatching(/^[\x21-\x7e]([\x20-\x7e]{0,60}[\x21-\x7e])?$/),
    fc.integer({ min: 100, max: 8_000 }).map(n => `${streamId}.${'9'.repeat(n)}`)
  )
  const tally = new Tally()
  await assertFuzz(t, FILE, settings, fc.asyncProperty(lastEventId, fc.boolean(), async (id, ownSession) => {
    const controller = new AbortController()
    const timer = setTimeout(() => { controller.abort() }, 10_000)
    try {
      const res = await fetch(gw.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': ownSession ? sessionId : `${sessionId}x`, 'last-event-id': id }, signal: controller.signal })
      tally.add(String(res.status))
      assert.ok(res.status < 500, `GET with Last-Event-ID ${id}: HTTP ${res.status}`)
      if (res.status === 200) {
        assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/)
        return
      }
      assertResponse(JSON.parse(await res.text()) as unknown, [null], `GET with Last-Event-ID ${id}: HTTP ${res.status} body`)
    } finally {
      clearTimeout(timer)
      controller.abort()
    }
  }))
  t.diagnostic(`answers: ${tally.toString()}`)
  await assertHealthyAndDrained(gw, Object.keys(FUZZ_UPSTREAMS))
})
