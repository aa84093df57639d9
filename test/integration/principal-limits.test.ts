import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import WebSocket from 'ws'
import { once } from 'node:events'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { readEvents } from '../helpers/sse-events.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// The caps per principal of the `limits` section, with two API-key principals in front of the
// controllable fixture over Streamable HTTP: past each cap a clear refusal (HTTP 429 where there is
// an HTTP answer), counted by limit; the other principal is unaffected; a closed slot is free again.
const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
const as = (who: keyof typeof KEYS): Record<string, string> => ({ authorization: `Bearer ${KEYS[who]}` })

interface Rpc { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string, data?: Record<string, unknown> } }

async function gateway (t: TestContext, limits: Record<string, number>, http: Record<string, unknown> = {}): Promise<RunningGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEYS.alice }, { id: 'bob', key: KEYS.bob }] },
    limits,
    http
  }))
  await waitReady(gw)
  return gw
}

/** The body of a refusal: JSON-RPC -32000 naming its SB_ERR_LIMIT_* code and the limit. */
async function refusal (res: Response, code: string, limit: string): Promise<Rpc> {
  assert.equal(res.status, 429)
  const body = await res.json() as Rpc
  assert.equal(body.error?.code, -32000)
  assert.deepEqual(body.error?.data?.['switchboard/error'], { code, limit, max: 1 })
  assert.match(body.error?.message ?? '', new RegExp(`limits\\.${limit}`))
  return body
}

const refusals = async (gw: RunningGateway, limit: string): Promise<number | undefined> => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_limit_refusals_total', { limit })

function session (gw: RunningGateway, who: keyof typeof KEYS, sessionId: string): Record<string, string> {
  return { ...as(who), 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
}

async function openGet (gw: RunningGateway, headers: Record<string, string>, t: TestContext): Promise<{ res: Response, close: () => void }> {
  const abort = new AbortController()
  t.after(() => { abort.abort() })
  const res = await fetch(gw.url, { headers: { ...headers, accept: 'text/event-stream' }, signal: abort.signal })
  return { res, close: () => { abort.abort() } }
}

test('limits.sessionsPerPrincipal: initialize past the cap is 429 SB_ERR_LIMIT_SESSIONS (over WebSocket a JSON-RPC error); another principal still opens sessions; a deleted or expired session frees its slot', { timeout: 60_000 }, async (t) => {
  // Idle long enough that the first session outlives the steps before its DELETE on a loaded machine.
  const gw = await gateway(t, { sessionsPerPrincipal: 1 }, { sessionIdleMs: 5000 })
  const { sessionId } = await rawInitialize(gw.url, '2025-11-25', as('alice'))
  const refused = await rawPost(gw.url, { jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }, as('alice'))
  assert.equal(refused.headers.get('mcp-session-id'), null)
  assert.equal((await refusal(refused, 'SB_ERR_LIMIT_SESSIONS', 'sessionsPerPrincipal')).id, 7)
  assert.equal(refused.headers.get('retry-after'), null, 'waiting alone does not free a session')

  const socket = new WebSocket(gw.url.replace('http:', 'ws:'), 'mcp', { headers: as('alice') })
  t.after(() => { socket.terminate() })
  await once(socket, 'open')
  socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ws', version: '1' } } }))
  const [frame] = await once(socket, 'message') as [Buffer]
  const wsAnswer = JSON.parse(String(frame)) as Rpc
  assert.equal((wsAnswer.error?.data?.['switchboard/error'] as { code?: string } | undefined)?.code, 'SB_ERR_LIMIT_SESSIONS')

  await rawInitialize(gw.url, '2025-11-25', as('bob'))
  assert.equal(await refusals(gw, 'sessionsPerPrincipal'), 2)

  assert.equal((await fetch(gw.url, { method: 'DELETE', headers: session(gw, 'alice', sessionId) })).status, 200)
  // The socket's session opens once the slot is free, on the same connection.
  socket.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ws', version: '1' } } }))
  const [again] = await once(socket, 'message') as [Buffer]
  assert.equal((JSON.parse(String(again)) as Rpc).result?.protocolVersion, '2025-11-25')
  socket.close()
  await waitFor(() => gw.gateway.limits.count('sessionsPerPrincipal', 'api-key:alice') === 0, 'the socket\'s session to end with it')

  // An idle session expires, and its slot with it.
  await rawInitialize(gw.url, '2025-11-25', as('alice'))
  await waitFor(() => gw.gateway.limits.count('sessionsPerPrincipal', 'api-key:alice') === 0, 'the idle session to expire', 15_000)
  await rawInitialize(gw.url, '2025-11-25', as('alice'))
})

test('limits.streamsPerSession: a second GET stream is 429 SB_ERR_LIMIT_STREAMS, a POST whose answer needs a stream then is cancelled and 429; other sessions are unaffected; closing the stream frees it', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t, { streamsPerSession: 1 })
  const { sessionId } = await rawInitialize(gw.url, '2025-11-25', as('alice'))
  const headers = session(gw, 'alice', sessionId)
  const first = await openGet(gw, headers, t)
  assert.equal(first.res.status, 200)
  await refusal((await openGet(gw, headers, t)).res, 'SB_ERR_LIMIT_STREAMS', 'streamsPerSession')

  // Progress turns the answer into a stream: refused, and the call does not run on.
  const slow = await rawPost(gw.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 30_000, steps: 300 }, _meta: { progressToken: 'p' } } }, headers)
  assert.equal((await refusal(slow, 'SB_ERR_LIMIT_STREAMS', 'streamsPerSession')).id, 3)
  assert.equal(gw.gateway.sessions.inFlightCount(), 0, 'the refused call was cancelled')
  // A POST answered as JSON needs no stream.
  const echo = await rawPost(gw.url, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'plain json' } } }, headers)
  assert.equal(echo.status, 200)

  const other = await rawInitialize(gw.url, '2025-11-25', as('alice'))
  const otherStream = await openGet(gw, session(gw, 'alice', other.sessionId), t)
  assert.equal(otherStream.res.status, 200, 'the cap is per session')
  otherStream.close()
  assert.equal(await refusals(gw, 'streamsPerSession'), 2)

  first.close()
  await waitFor(() => gw.gateway.limits.count('streamsPerSession', sessionId) === 0, 'the closed stream to free its slot')
  const progress = await rawPost(gw.url, { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 100, steps: 2 }, _meta: { progressToken: 'q' } } }, headers)
  assert.equal(progress.status, 200)
  assert.match(progress.headers.get('content-type') ?? '', /text\/event-stream/)
  const events = await readEvents(progress, seen => seen.some(e => e.data.includes('"result"')))
  assert.ok(events.some(e => e.data.includes('notifications/progress')))
  await waitFor(() => gw.gateway.limits.holders('streamsPerSession') === 0, 'every stream slot to be released')
  const again = await openGet(gw, headers, t)
  assert.equal(again.res.status, 200)
  // Deleting the session ends its stream, and frees the stream's slot.
  assert.equal((await fetch(gw.url, { method: 'DELETE', headers })).status, 200)
  await waitFor(() => gw.gateway.limits.holders('streamsPerSession') === 0, 'the deleted session\'s stream to free its slot')
})

const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} }

async function modernPost (gw: RunningGateway, who: keyof typeof KEYS, id: number, method: string, params: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return await fetch(gw.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}), ...as(who) },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: ENVELOPE } }),
    ...(signal === undefined ? {} : { signal })
  })
}

test('limits.listenStreamsPerPrincipal: a second subscriptions/listen is 429 SB_ERR_LIMIT_LISTEN_STREAMS; another principal still listens; closing the listen frees its slot', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t, { listenStreamsPerPrincipal: 1 })
  const abort = new AbortController()
  t.after(() => { abort.abort() })
  const first = await modernPost(gw, 'alice', 1, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, abort.signal)
  assert.equal(first.status, 200)
  await refusal(await modernPost(gw, 'alice', 2, 'subscriptions/listen', { notifications: { toolsListChanged: true } }), 'SB_ERR_LIMIT_LISTEN_STREAMS', 'listenStreamsPerPrincipal')
  const bob = new AbortController()
  t.after(() => { bob.abort() })
  assert.equal((await modernPost(gw, 'bob', 3, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, bob.signal)).status, 200)
  assert.equal(await refusals(gw, 'listenStreamsPerPrincipal'), 1)

  abort.abort()
  bob.abort()
  await waitFor(() => gw.gateway.limits.holders('listenStreamsPerPrincipal') === 0, 'the closed listens to free their slots')
  const again = new AbortController()
  t.after(() => { again.abort() })
  assert.equal((await modernPost(gw, 'alice', 4, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, again.signal)).status, 200)
})

test('limits.inFlightPerPrincipal: past the cap a request is 429 SB_ERR_LIMIT_IN_FLIGHT with Retry-After, across sessions and eras; another principal is served; a finished or cancelled request frees its slot', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t, { inFlightPerPrincipal: 2 })
  const a = session(gw, 'alice', (await rawInitialize(gw.url, '2025-11-25', as('alice'))).sessionId)
  const b = session(gw, 'alice', (await rawInitialize(gw.url, '2025-11-25', as('alice'))).sessionId)
  const stalls = [rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'web__stall', arguments: {} } }, a), rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'web__stall', arguments: {} } }, b)]
  await waitFor(() => gw.gateway.limits.count('inFlightPerPrincipal', 'api-key:alice') === 2, 'both calls to be in flight')

  const refused = await rawPost(gw.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'x' } } }, a)
  assert.equal(refused.headers.get('retry-after'), '1')
  const body = await refused.json() as Rpc
  assert.equal(refused.status, 429)
  assert.equal(body.id, 3)
  assert.deepEqual(body.error?.data, { 'switchboard/error': { code: 'SB_ERR_LIMIT_IN_FLIGHT', limit: 'inFlightPerPrincipal', max: 2 }, 'switchboard/retryAfterMs': 1000 })
  const prompts = await rawPost(gw.url, { jsonrpc: '2.0', id: 4, method: 'prompts/list', params: {} }, b)
  assert.equal(prompts.status, 429, 'every method counts, on every session of the principal')
  const modern = await modernPost(gw, 'alice', 5, 'tools/call', { name: 'web__echo', arguments: { text: 'x' } })
  assert.equal(modern.status, 429, 'a 2026-07-28 request of the same principal too')
  assert.equal(((await modern.json() as Rpc).error?.data?.['switchboard/error'] as { code?: string }).code, 'SB_ERR_LIMIT_IN_FLIGHT')

  const bob = session(gw, 'bob', (await rawInitialize(gw.url, '2025-11-25', as('bob'))).sessionId)
  const served = await rawPost(gw.url, { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'bob is served' } } }, bob)
  assert.equal(served.status, 200)
  assert.match(await served.text(), /bob is served/)
  assert.equal(await refusals(gw, 'inFlightPerPrincipal'), 3)

  // Cancelling one stalled call frees its slot.
  assert.equal((await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'test' } }, a)).status, 202)
  await stalls[0]
  await waitFor(() => gw.gateway.limits.count('inFlightPerPrincipal', 'api-key:alice') === 1, 'the cancelled call to free its slot')
  const now = await rawPost(gw.url, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'web__echo', arguments: { text: 'served again' } } }, a)
  assert.equal(now.status, 200)
  assert.match(await now.text(), /served again/)
  // Deleting a session cancels its call, which frees its slot.
  assert.equal((await fetch(gw.url, { method: 'DELETE', headers: b })).status, 200)
  await stalls[1]
  await waitFor(() => gw.gateway.limits.holders('inFlightPerPrincipal') === 0, 'no slot left held')
})

test('without auth every client is the one principal anonymous: the caps apply to all of them together', { timeout: 60_000 }, async (t) => {
  const gw = await startGateway(t, JSON.stringify({ upstreams: [], limits: { sessionsPerPrincipal: 1 } }))
  const { sessionId } = await rawInitialize(gw.url)
  await refusal(await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'another client', version: '1' } } }), 'SB_ERR_LIMIT_SESSIONS', 'sessionsPerPrincipal')
  assert.equal(gw.gateway.limits.count('sessionsPerPrincipal', 'none:anonymous'), 1)
  assert.equal((await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' } })).status, 200)
  await rawInitialize(gw.url)
})
