// Property-based fuzzing of the transports where one connection is the session: WebSocket and the
// legacy HTTP+SSE transport (2024-11-05), with valid messages for every method and mutations of them.
// Replay a failure: FUZZ_SEED=<seed> node --import tsx --test test/fuzz/downstream-channels.test.ts
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import fc from 'fast-check'
import { WebSocket } from 'ws'
import { assertFuzz, assertResponse, checkPostAnswer, describeSent, fuzzSettings, isResponseLike, sseEvents } from './fuzz-support.ts'
import { MessageInbox, type Send, exchange } from './channel-exchange.ts'
import { FUZZ_UPSTREAMS, assertHealthyAndDrained, assertNoUpstreamLost, controlSession, errorLogs, reconnectsOf, startDownstreamFuzzGateway } from './fuzz-gateway.ts'
import { fuzzed, sessionMessage } from './messages.ts'
import { type Json, mutate, toText } from './mutations.ts'
import { metricValue, scrapeMetrics, waitFor } from '../helpers/start-gateway.ts'

const FILE = 'test/fuzz/downstream-channels.test.ts'
const RUNS = 200
const FRESH_RUNS = 100
const CONTROL_EVERY = 25

function initialize (protocolVersion: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } })
}

/** Initializes the session on a channel and sends notifications/initialized. */
async function openSession (send: Send, inbox: MessageInbox, protocolVersion: string): Promise<void> {
  await send(initialize(protocolVersion))
  const answer = await inbox.waitFrom(0, m => isResponseLike(m) && m.id === 'init', 'initialize')
  assertResponse(answer, ['init'], 'initialize')
  assert.ok('result' in (answer as object), `initialize failed: ${JSON.stringify(answer)}`)
  await send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
}

test('a WebSocket session fed random and mutated frames answers every request with its id or a spec error and stays open and usable for others', async (t) => {
  const gw = await startDownstreamFuzzGateway(t)
  const control = await controlSession(t, gw, ...Object.keys(FUZZ_UPSTREAMS).map(name => `${name}__echo`))
  const settings = fuzzSettings(t, FILE, RUNS)
  const { ws, inbox, send } = await openSocket(gw.url)
  t.after(() => { ws.terminate() })
  await openSession(send, inbox, '2025-11-25')
  let run = 0
  await assertFuzz(t, FILE, settings, fc.asyncProperty(fuzzed(sessionMessage), async (f) => {
    const text = toText(mutate(f.message, f.mutations), f.text)
    const before = await reconnectsOf(gw)
    await exchange(send, inbox, text)
    // Checked after each message, so a failure shrinks to the message that took an upstream away.
    assertNoUpstreamLost(gw, before, `sending ${text.slice(0, 400)}`)
    if (++run % CONTROL_EVERY === 0) await control()
  }))
  await control()
  ws.close()
  t.diagnostic(`error-level log lines: ${errorLogs(gw)}`)
  await assertHealthyAndDrained(gw, Object.keys(FUZZ_UPSTREAMS))
  assertNoUpstreamLost(gw)
})

/** A WebSocket to the gateway whose messages go to an inbox; with the send the exchange uses. */
async function openSocket (url: string): Promise<{ ws: WebSocket, inbox: MessageInbox, send: Send }> {
  const ws = new WebSocket(url.replace(/^http/, 'ws'), 'mcp')
  const inbox = new MessageInbox()
  ws.on('message', (data) => { inbox.push(JSON.parse(String(data)) as unknown) })
  ws.on('close', (code, reason) => { inbox.close(`code ${code} ${String(reason)}`) })
  ws.on('error', () => {})
  await once(ws, 'open', { signal: AbortSignal.timeout(10_000) })
  const send: Send = async (text) => {
    await new Promise<void>((resolve, reject) => { ws.send(text, err => { if (err === undefined || err === null) resolve(); else reject(err) }) })
    return true
  }
  return { ws, inbox, send }
}

test('fresh WebSocket connections whose first frames are random and mutated get answers like any session\'s, and every session ends with its socket', async (t) => {
  const gw = await startDownstreamFuzzGateway(t)
  const settings = fuzzSettings(t, FILE, FRESH_RUNS)
  const first = fuzzed(fc.oneof(sessionMessage, fc.constant(JSON.parse(initialize('2025-11-25')) as Json)))
  await assertFuzz(t, FILE, settings, fc.asyncProperty(fc.array(first, { minLength: 1, maxLength: 3 }), async (frames) => {
    const { ws, inbox, send } = await openSocket(gw.url)
    try {
      for (const f of frames) await exchange(send, inbox, toText(mutate(f.message, f.mutations), f.text))
    } finally {
      ws.terminate()
    }
  }))
  // No series at all: no frame opened a session (a replayed case that never initializes).
  await waitFor(async () => (metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_sessions_active', { transport: 'websocket' }) ?? 0) === 0, 'every WebSocket session to end with its socket', 15_000)
  t.diagnostic(`error-level log lines: ${errorLogs(gw)}`)
  await assertHealthyAndDrained(gw, Object.keys(FUZZ_UPSTREAMS))
  assertNoUpstreamLost(gw)
})

/** Opens GET /sse, collects its messages in an inbox, and answers the URL its endpoint event names. */
async function openLegacyStream (t: TestContext, baseUrl: string, inbox: MessageInbox): Promise<string> {
  const controller = new AbortController()
  t.after(() => { controller.abort() })
  const res = await fetch(`${baseUrl}/sse`, { headers: { accept: 'text/event-stream' }, signal: controller.signal })
  assert.equal(res.status, 200)
  let endpoint: (url: string) => void = () => {}
  const named = new Promise<string>((resolve) => { endpoint = resolve })
  void (async () => {
    try {
      for await (const { event, data } of sseEvents(res)) {
        if (event === 'endpoint') endpoint(new URL(data, baseUrl).href)
        else inbox.push(JSON.parse(data) as unknown)
      }
      inbox.close('the stream ended')
    } catch (err) {
      inbox.close(String(err))
    }
  })()
  return await named
}

test('a legacy HTTP+SSE session fed random and mutated POSTs never gets a 5xx, answers every request on its stream, and stays usable for others', async (t) => {
  const gw = await startDownstreamFuzzGateway(t)
  const control = await controlSession(t, gw, ...Object.keys(FUZZ_UPSTREAMS).map(name => `${name}__echo`))
  const settings = fuzzSettings(t, FILE, RUNS)
  const inbox = new MessageInbox()
  const messagesUrl = await openLegacyStream(t, gw.baseUrl, inbox)
  // A POST is answered 202 (the answer comes on the stream), or refused at the edge (e.g. not JSON)
  // with a 4xx carrying the error, and then nothing comes on the stream; never a 5xx.
  const send: Send = async (text) => {
    const res = await fetch(messagesUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text, signal: AbortSignal.timeout(10_000) })
    const body = await res.text()
    if (res.status === 202) return true
    let parsedBody: unknown
    try { parsedBody = JSON.parse(body) } catch { parsedBody = undefined }
    checkPostAnswer({ status: res.status, contentType: res.headers.get('content-type') ?? '', messages: parsedBody === undefined ? [] : [parsedBody], text: body }, describeSent(text), `POST ${text.slice(0, 400)}`)
    return false
  }
  await openSession(send, inbox, '2024-11-05')
  let run = 0
  await assertFuzz(t, FILE, settings, fc.asyncProperty(fuzzed(sessionMessage), async (f) => {
    const text = toText(mutate(f.message, f.mutations), f.text)
    const before = await reconnectsOf(gw)
    await exchange(send, inbox, text)
    // Checked after each message, so a failure shrinks to the message that took an upstream away.
    assertNoUpstreamLost(gw, before, `sending ${text.slice(0, 400)}`)
    if (++run % CONTROL_EVERY === 0) await control()
  }))
  await control()
  t.diagnostic(`error-level log lines: ${errorLogs(gw)}`)
  await assertHealthyAndDrained(gw, Object.keys(FUZZ_UPSTREAMS))
  assertNoUpstreamLost(gw)
})
