import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { readEvents, type SseEvent } from '../helpers/sse-events.ts'
import { rawPost, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

// subscriptions/listen, the 2026-07-28 replacement of the GET stream and resources/subscribe, in
// front of a 2025-11-25 upstream (the controllable fixture over Streamable HTTP) whose tools change
// its tool list and touch its resources.
const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} }

function post (url: string, id: number, method: string, params: Record<string, unknown>): Promise<Response> {
  return rawPost(url, { jsonrpc: '2.0', id, method, params: { ...params, _meta: ENVELOPE } }, {
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {})
  })
}

interface Message { id?: unknown, method?: string, params?: Record<string, unknown> & { _meta?: Record<string, unknown> }, result?: Record<string, unknown> }
const parsed = (events: SseEvent[]): Message[] => events.filter(e => e.data !== '').map(e => JSON.parse(e.data) as Message)

test('subscriptions/listen acknowledges what it honours, then carries the asked-for list changes and resource updates, each tagged with the listen request\'s id', { timeout: 60_000 }, async (t) => {
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, `http: { modernClients: true }\ncatalog: { listChangedDebounceMs: 20 }\nupstreams:\n  - { name: web, transport: streamable-http, url: ${JSON.stringify(upstream.url)} }\n`)
  await waitReady(gw)
  const hello = 'fixture://web/hello'
  const stream = await post(gw.url, 'listen-1' as unknown as number, 'subscriptions/listen', { notifications: { toolsListChanged: true, resourceSubscriptions: [hello] } })
  assert.equal(stream.status, 200)
  assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/)
  let triggered = false
  const events = parsed(await readEvents(stream, (seen) => {
    if (!triggered && seen.length > 0) {
      triggered = true
      // Once acknowledged: a tool added upstream, then the resource touched.
      void post(gw.url, 2, 'tools/call', { name: 'web__add_tool', arguments: { name: 'fresh' } })
        .then(async () => await post(gw.url, 3, 'tools/call', { name: 'web__touch', arguments: { uri: hello } }))
    }
    const messages = parsed(seen)
    return messages.some(m => m.method === 'notifications/tools/list_changed') && messages.some(m => m.method === 'notifications/resources/updated')
  }))
  const [ack, ...rest] = events
  assert.equal(ack?.method, 'notifications/subscriptions/acknowledged', 'the acknowledgement comes first')
  assert.deepEqual(ack?.params?.notifications, { toolsListChanged: true, resourceSubscriptions: [hello] }, 'what is honoured, and nothing that was not asked')
  for (const m of events) assert.equal(m.params?._meta?.['io.modelcontextprotocol/subscriptionId'], 'listen-1', m.method)
  assert.ok(rest.some(m => m.method === 'notifications/tools/list_changed'))
  assert.deepEqual(rest.find(m => m.method === 'notifications/resources/updated')?.params?.uri, hello)
  assert.ok(!rest.some(m => m.method === 'notifications/message' || m.method === 'notifications/prompts/list_changed'), 'nothing that was not asked for')
  assert.equal(gw.gateway.sessions.size, 0, 'a listen is not a session')
  // The stream is gone: its upstream subscription is dropped with it.
  const before = upstream.state.stats.unsubscribes
  await waitFor(() => upstream.state.stats.unsubscribes > before, 'the upstream to be unsubscribed when the stream closed')
})

test('subscriptions/listen without a notifications filter is invalid params', async (t) => {
  const gw = await startGateway(t, 'http: { modernClients: true }\nupstreams: []\n')
  const res = await post(gw.url, 1, 'subscriptions/listen', {})
  assert.equal(res.status, 200)
  assert.equal(((await res.json()) as { error?: { code: number } }).error?.code, -32602)
})
