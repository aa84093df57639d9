import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { startOtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts'
import { startGateway, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

interface Who { structuredContent: { headers?: Record<string, string>, meta: Record<string, unknown> } }

const KEY = 'alice-key-0123456789abcdef'
const SECRET_ARGUMENT = 'do-not-trace-this-argument'

async function setup (t: TestContext, tracing: Record<string, unknown> | undefined): Promise<{ gw: RunningGateway, receiver: Awaited<ReturnType<typeof startOtlpReceiver>> }> {
  const receiver = await startOtlpReceiver(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    ...(tracing === undefined ? {} : { tracing: { ...tracing, endpoint: receiver.url, headers: { 'x-collector-key': 'collector-secret-0123' } } })
  }))
  await waitReady(gw)
  return { gw, receiver }
}

async function clientOf (t: TestContext, gw: RunningGateway, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'traced', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${KEY}`, ...headers } } }))
  t.after(async () => { await client.close().catch(() => {}) })
  return client
}

function ids (): { trace: string, span: string, header: string } {
  const trace = randomBytes(16).toString('hex')
  const span = randomBytes(8).toString('hex')
  return { trace, span, header: `00-${trace}-${span}-01` }
}

function one (spans: ReceivedSpan[], name: string, kind: number): ReceivedSpan {
  const found = spans.filter(s => s.name === name && s.kind === kind)
  assert.equal(found.length, 1, `one ${name} span of kind ${kind} in ${JSON.stringify(spans.map(s => [s.name, s.kind]))}`)
  return found[0] as ReceivedSpan
}

test('a traced call: a SERVER span under the client\'s traceparent header, a CLIENT span under it, the context passed upstream in _meta and the HTTP header; no arguments or secrets exported', { timeout: 60_000 }, async (t) => {
  const { gw, receiver } = await setup(t, { enabled: true, serviceName: 'gw-under-test' })
  const viaHeader = ids()
  const client = await clientOf(t, gw, { traceparent: viaHeader.header })
  const incoming = ids()
  // The client's traceparent HTTP header is per connection in the SDK; a per-request one rides in _meta and wins.
  const who = await client.callTool({ name: 'web__whoami', arguments: {}, _meta: { traceparent: incoming.header } }) as unknown as Who
  await client.callTool({ name: 'web__echo', arguments: { text: SECRET_ARGUMENT } })
  await assert.rejects(client.callTool({ name: 'web__nope', arguments: {} }), /Unknown tool/)
  await gw.close()

  const server = one(receiver.spans, 'tools/call web__whoami', 2)
  assert.equal(server.traceId, incoming.trace, 'the client\'s trace goes on')
  assert.equal(server.parentSpanId, incoming.span)
  assert.equal(server.service, 'gw-under-test')
  assert.deepEqual([server.attributes['mcp.method.name'], server.attributes['gen_ai.tool.name'], server.attributes['switchboard.upstream'], server.attributes['switchboard.outcome']], ['tools/call', 'web__whoami', 'web', 'ok'])
  const upstreamSpan = one(receiver.spans, 'tools/call whoami', 3)
  assert.equal(upstreamSpan.traceId, incoming.trace)
  assert.equal(upstreamSpan.parentSpanId, server.spanId)
  assert.equal(upstreamSpan.attributes['switchboard.upstream'], 'web')
  const sent = `00-${incoming.trace}-${upstreamSpan.spanId}-01`
  assert.equal(who.structuredContent.meta.traceparent, sent, 'the upstream got the gateway\'s span in _meta')
  assert.equal(who.structuredContent.headers?.traceparent, sent, 'and in the traceparent header')

  const unknown = one(receiver.spans, 'tools/call web__nope', 2)
  assert.equal(unknown.attributes['error.type'], '-32602')
  assert.equal(unknown.status?.code, 2, 'status ERROR')
  const echo = one(receiver.spans, 'tools/call web__echo', 2)
  assert.equal(echo.attributes['switchboard.outcome'], 'ok')
  assert.deepEqual([echo.traceId, echo.parentSpanId], [viaHeader.trace, viaHeader.span], 'without _meta, the traceparent HTTP header is the parent')
  const everything = receiver.bodies.join('\n')
  for (const secret of [SECRET_ARGUMENT, KEY, 'collector-secret-0123']) assert.ok(!everything.includes(secret), `${secret} is not exported`)
  assert.equal(receiver.headers[0]?.['x-collector-key'], 'collector-secret-0123', 'the configured headers go to the collector')
})

test('without a trace from the client a new trace starts; lists are spans too', { timeout: 60_000 }, async (t) => {
  const { gw, receiver } = await setup(t, { enabled: true })
  const client = await clientOf(t, gw)
  await client.listTools()
  await client.callTool({ name: 'web__echo', arguments: { text: 'x' } })
  await gw.close()
  const list = one(receiver.spans, 'tools/list', 2)
  assert.equal(list.parentSpanId, undefined)
  const call = one(receiver.spans, 'tools/call web__echo', 2)
  assert.notEqual(call.traceId, list.traceId, 'each request without a parent is its own trace')
  assert.equal(one(receiver.spans, 'tools/call echo', 3).traceId, call.traceId)
})

test('tracing off (the default): nothing is exported and the client\'s _meta reaches the upstream untouched', { timeout: 60_000 }, async (t) => {
  const { gw, receiver } = await setup(t, undefined)
  const client = await clientOf(t, gw)
  const incoming = ids()
  const who = await client.callTool({ name: 'web__whoami', arguments: {}, _meta: { traceparent: incoming.header } }) as unknown as Who
  assert.equal(who.structuredContent.meta.traceparent, incoming.header)
  const plain = await client.callTool({ name: 'web__whoami', arguments: {} }) as unknown as Who
  assert.equal(plain.structuredContent.meta.traceparent, undefined, 'nothing is added')
  await gw.close()
  assert.equal(receiver.bodies.length, 0)
})
