import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

const WAIT_MS = 10_000
const EVENT_ID = /^([A-Za-z0-9_-]+)\.(\d+)$/

interface SseEvent { id?: string, event?: string, data?: string, retry?: number }
type Message = Record<string, unknown> & { id?: unknown, method?: string, params?: Record<string, unknown>, result?: Record<string, unknown>, error?: { code: number } }

/** Reads SSE events one at a time from a fetch response; comments (keepalives) are skipped. */
class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>
  private readonly decoder = new TextDecoder()
  private buffer = ''

  constructor (res: Response) {
    assert.equal(res.headers.get('content-type'), 'text/event-stream')
    this.reader = res.body!.getReader()
  }

  /** The next event, or undefined once the server has ended the stream. */
  async next (): Promise<SseEvent | undefined> {
    for (;;) {
      const end = this.buffer.indexOf('\n\n')
      if (end !== -1) {
        const block = this.buffer.slice(0, end)
        this.buffer = this.buffer.slice(end + 2)
        const event = parseBlock(block)
        if (event !== undefined) return event
        continue
      }
      const { value, done } = await this.reader.read()
      if (done) return undefined
      this.buffer += this.decoder.decode(value, { stream: true })
    }
  }

  /** Every remaining event, until the server ends the stream. */
  async rest (): Promise<SseEvent[]> {
    const events: SseEvent[] = []
    for (let event = await this.next(); event !== undefined; event = await this.next()) events.push(event)
    return events
  }
}

function parseBlock (block: string): SseEvent | undefined {
  const event: SseEvent = {}
  let any = false
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
    any = true
    if (field === 'id') event.id = value
    else if (field === 'event') event.event = value
    else if (field === 'data') event.data = event.data === undefined ? value : `${event.data}\n${value}`
    else if (field === 'retry') event.retry = Number(value)
  }
  return any ? event : undefined
}

function messageOf (event: SseEvent): Message {
  return JSON.parse(event.data ?? '') as Message
}

function streamOf (event: SseEvent): { streamId: string, seq: number } {
  const match = EVENT_ID.exec(event.id ?? '')
  assert.ok(match !== null, `event id ${String(event.id)} is <streamId>.<seq>`)
  return { streamId: match[1] ?? '', seq: Number(match[2]) }
}

async function gatewayWithUpstream (t: TestContext, http: Record<string, unknown> = {}): Promise<RunningGateway> {
  const upstream = await startControllableHttpServer({ name: 'up' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, JSON.stringify({ http, upstreams: [{ name: 'up', transport: 'streamable-http', url: upstream.url }] }))
  await waitReady(gw)
  return gw
}

/** POSTs a tools/call that may be dropped with `abort`; every request is bounded. */
async function postCall (gw: RunningGateway, sessionId: string, id: number, name: string, args: Record<string, unknown>, progressToken?: string, abort?: AbortController): Promise<Response> {
  const params = { name, arguments: args, ...(progressToken === undefined ? {} : { _meta: { progressToken } }) }
  const signals = [AbortSignal.timeout(WAIT_MS), ...(abort === undefined ? [] : [abort.signal])]
  return await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params }),
    signal: AbortSignal.any(signals)
  })
}

async function getStream (gw: RunningGateway, sessionId: string, lastEventId?: string, abort?: AbortController): Promise<Response> {
  const signals = [AbortSignal.timeout(WAIT_MS), ...(abort === undefined ? [] : [abort.signal])]
  const res = await fetch(gw.url, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': sessionId, ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
    signal: AbortSignal.any(signals)
  })
  assert.equal(res.status, 200)
  return res
}

function progressOf (events: SseEvent[], token: string): number[] {
  return events.filter(e => e.data !== '').map(messageOf).filter(m => m.method === 'notifications/progress' && m.params?.progressToken === token).map(m => Number(m.params?.progress))
}

test('a 2025-11-25 session gets a priming event first on each POST stream; a 2025-06-18 session gets ids but no priming', async (t) => {
  const gw = await gatewayWithUpstream(t, { retryMs: 1234 })
  const modern = await rawInitialize(gw.url, '2025-11-25')
  const events = await new SseReader(await postCall(gw, modern.sessionId, 2, 'up__slow', { ms: 30, steps: 2 }, 'p')).rest()
  const [priming, ...rest] = events
  assert.ok(priming !== undefined)
  assert.deepEqual({ ...priming, id: undefined }, { id: undefined, retry: 1234, data: '' })
  const { streamId } = streamOf(priming)
  assert.equal(streamOf(priming).seq, 0)
  assert.deepEqual(rest.map(e => streamOf(e)), rest.map((_e, i) => ({ streamId, seq: i + 1 })), 'one stream, consecutive seqs')
  assert.deepEqual(progressOf(rest, 'p'), [1, 2])
  assert.equal(messageOf(rest.at(-1) ?? {}).id, 2)

  const older = await rawInitialize(gw.url, '2025-06-18')
  const oldEvents = await new SseReader(await postCall(gw, older.sessionId, 2, 'up__slow', { ms: 30, steps: 2 }, 'q')).rest()
  assert.equal(oldEvents.length, 3)
  assert.ok(oldEvents.every(e => e.retry === undefined && e.data !== '' && e.event === 'message'))
  assert.deepEqual(oldEvents.map(e => streamOf(e).seq), [1, 2, 3])
  assert.deepEqual(progressOf(oldEvents, 'q'), [1, 2])

  const plain = await postCall(gw, older.sessionId, 3, 'up__echo', { text: 'no stream needed' })
  assert.equal(plain.headers.get('content-type'), 'application/json; charset=utf-8')
})

test('a dropped POST stream resumes with Last-Event-ID: the rest of that stream only, the result, then the end', async (t) => {
  const gw = await gatewayWithUpstream(t)
  const { sessionId } = await rawInitialize(gw.url)
  const drop = new AbortController()
  const a = new SseReader(await postCall(gw, sessionId, 10, 'up__slow', { ms: 600, steps: 3 }, 'tok-a', drop))
  // A concurrent call of the same session on a stream of its own.
  const other = postCall(gw, sessionId, 11, 'up__slow', { ms: 600, steps: 3 }, 'tok-b').then(async res => await new SseReader(res).rest())

  const priming = await a.next()
  const first = await a.next()
  assert.ok(priming !== undefined && first !== undefined)
  assert.equal(streamOf(priming).seq, 0)
  assert.deepEqual(progressOf([first], 'tok-a'), [1])
  drop.abort()

  const resumed = await new SseReader(await getStream(gw, sessionId, first.id)).rest()
  const { streamId } = streamOf(first)
  assert.deepEqual(resumed.map(e => streamOf(e)), [2, 3, 4].map(seq => ({ streamId, seq })), 'exactly the events after the last one seen')
  assert.deepEqual(progressOf(resumed, 'tok-a'), [2, 3])
  const result = messageOf(resumed.at(-1) ?? {})
  assert.equal(result.id, 10)
  assert.deepEqual(result.result?.content, [{ type: 'text', text: 'done' }], 'a disconnect is not a cancellation')

  const b = await other
  assert.notEqual(streamOf(b[0] ?? {}).streamId, streamId)
  assert.deepEqual(progressOf(b, 'tok-b'), [1, 2, 3])
  assert.equal(messageOf(b.at(-1) ?? {}).id, 11)
  assert.ok(resumed.every(e => !(e.data ?? '').includes('tok-b')), 'nothing of the other stream is replayed')

  // The ended stream can still be replayed from its start while its events are kept.
  const again = await new SseReader(await getStream(gw, sessionId, priming.id)).rest()
  assert.deepEqual(again.map(e => streamOf(e).seq), [1, 2, 3, 4])
  assert.equal(messageOf(again.at(-1) ?? {}).id, 10)
})

test('the standalone GET stream resumes: what was sent while disconnected is replayed, and it stays live', async (t) => {
  const gw = await gatewayWithUpstream(t)
  const { sessionId } = await rawInitialize(gw.url)
  const drop = new AbortController()
  const first = new SseReader(await getStream(gw, sessionId, undefined, drop))
  const priming = await first.next()
  assert.ok(priming !== undefined)
  const { streamId, seq } = streamOf(priming)
  assert.equal(seq, 0)
  drop.abort()

  const relayed = async (): Promise<number> => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_notifications_relayed_total', { method: 'notifications/tools/list_changed' }) ?? 0
  const added = await postCall(gw, sessionId, 2, 'up__add_tool', { name: 'while_away' })
  assert.equal(added.status, 200)
  await waitFor(async () => await relayed() === 1, 'tools/list_changed to be sent while the client is away', WAIT_MS)

  const stop = new AbortController()
  t.after(() => { stop.abort() })
  const resumed = new SseReader(await getStream(gw, sessionId, priming.id, stop))
  const missed = await resumed.next()
  assert.ok(missed !== undefined)
  assert.deepEqual(streamOf(missed), { streamId, seq: 1 })
  assert.equal(messageOf(missed).method, 'notifications/tools/list_changed')

  await postCall(gw, sessionId, 3, 'up__add_tool', { name: 'while_back' })
  const live = await resumed.next()
  assert.ok(live !== undefined)
  assert.deepEqual(streamOf(live), { streamId, seq: 2 })
  assert.equal(messageOf(live).method, 'notifications/tools/list_changed')
})

test('an unknown or garbage Last-Event-ID gives a fresh stream; a foreign POST stream\'s id gets an error for the request it names and the end, never that stream or a hang', async (t) => {
  const gw = await gatewayWithUpstream(t)
  const mine = await rawInitialize(gw.url)
  const theirs = await rawInitialize(gw.url)
  const theirCall = await new SseReader(await postCall(gw, theirs.sessionId, 2, 'up__slow', { ms: 10, steps: 1 }, 'secret')).rest()
  const theirId = theirCall[0]?.id
  assert.ok(theirId !== undefined)

  const stop = new AbortController()
  t.after(() => { stop.abort() })
  const seen = new Set<string>()
  for (const lastEventId of ['garbage', 'AAAAAAAAAAAAAAAAAAAAAAAA.3', `${'x'.repeat(300)}.1`]) {
    const res = await getStream(gw, mine.sessionId, lastEventId, stop)
    const event = await new SseReader(res).next()
    assert.ok(event !== undefined, `a stream for Last-Event-ID ${lastEventId.slice(0, 30)}`)
    assert.equal(event.data, '', 'it starts with a priming event')
    const { streamId, seq } = streamOf(event)
    assert.equal(seq, 0)
    assert.ok(!seen.has(streamId) && streamId !== streamOf({ id: theirId }).streamId, 'a new stream, not the one named')
    seen.add(streamId)
  }
  // A POST stream's id names its request: unknown in this session, that request is answered as lost.
  const foreign = await new SseReader(await getStream(gw, mine.sessionId, theirId, stop)).rest()
  assert.equal(foreign.length, 1, `one event, then the end: ${JSON.stringify(foreign)}`)
  const lost = JSON.parse(foreign[0]?.data ?? '{}') as { id?: unknown, error?: { code?: number, data?: Record<string, { code?: string }> } }
  assert.equal(lost.id, 2)
  assert.equal(lost.error?.code, -32603)
  assert.equal(lost.error?.data?.['switchboard/error']?.code, 'SB_ERR_CALL_LOST')
  assert.ok(!JSON.stringify(foreign).includes('secret'), 'nothing of the other session\'s stream')
})

test('with http.modernClients off, a 2026-07-28 first request gets 400 with a plain -32000 error, with or without its version header', async (t) => {
  const gw = await startGateway(t, 'http: { modernClients: false }\nupstreams: []\n')
  const discover = {
    jsonrpc: '2.0',
    id: 1,
    method: 'server/discover',
    params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } }
  }
  const modernCodes = [-32020, -32021, -32022]
  const withAndWithoutHeader: Array<Record<string, string>> = [{ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' }, {}]
  for (const headers of withAndWithoutHeader) {
    const res = await rawPost(gw.url, discover, headers)
    assert.equal(res.status, 400)
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
    const body = await res.json() as Message
    assert.equal(body.error?.code, -32000)
    assert.ok(!modernCodes.includes(body.error?.code ?? 0))
  }
  assert.equal(gw.gateway.sessions.size, 0)
})

test('with http.modernClients off, an SDK client in auto version negotiation probes, falls back to initialize and works', async (t) => {
  const gw = await gatewayWithUpstream(t, { modernClients: false })
  const client = new Client({ name: 'probing', version: '1.0.0' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: 5_000 } } })
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)))
  t.after(async () => { await client.close().catch(() => {}) })
  assert.equal(client.getProtocolEra(), 'legacy')
  assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25')
  const echoed = await client.callTool({ name: 'up__echo', arguments: { text: 'after the fallback' } })
  assert.deepEqual(echoed.content, [{ type: 'text', text: 'after the fallback' }])
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_http_rejections_total', { reason: 'protocol_version' }), 1, 'the probe was refused once')
})
