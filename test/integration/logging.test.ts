import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Client, LoggingMessageNotification } from '@modelcontextprotocol/client'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

type Json = Record<string, unknown>
type LogParams = LoggingMessageNotification['params']

const WAIT_MS = 10_000
// Long enough that the call's own answer is back before the log is sent, so the log is unrelated.
const LATER_MS = 250

function stdioUpstream (name: string, extra: Json = {}): Json {
  const { command, args } = fixtureCommand(['--name', name])
  return { name, transport: 'stdio', command, args, ...extra }
}

async function gatewayWith (t: TestContext, upstreams: Json[]): Promise<RunningGateway> {
  const gw = await startGateway(t, JSON.stringify({ upstreams }))
  await waitReady(gw)
  for (const status of gw.gateway.pool.status()) assert.equal(status.state, 'ready', `${status.name}: ${status.lastError ?? ''}`)
  return gw
}

/** Every log message the client receives, in order. */
function logsOf (client: Client): LogParams[] {
  const seen: LogParams[] = []
  client.setNotificationHandler('notifications/message', (notification) => { seen.push(notification.params) })
  return seen
}

async function call (client: Client, name: string, args: Json = {}): Promise<{ text: string, structured: unknown }> {
  const result = await client.callTool({ name, arguments: args })
  const text = (result.content as Array<{ text?: string }>).map(block => block.text ?? '').join('')
  return { text, structured: result.structuredContent }
}

async function upstreamLevel (client: Client, tool: string): Promise<unknown> {
  return ((await call(client, tool)).structured as { logLevel: unknown }).logLevel
}

/** The SDK client opens its GET stream on its own after initialize; unrelated messages need it. */
async function streamsOpen (gw: RunningGateway, count: number): Promise<void> {
  await waitFor(() => {
    const sessions = [...gw.gateway.sessions.all()]
    return sessions.length === count && sessions.every(s => s.hasStream)
  }, `${count} sessions with a GET stream`, WAIT_MS)
}

/** The JSON-RPC messages of an SSE response until it ends. */
async function readSse (res: Response): Promise<Json[]> {
  const text = await Promise.race([res.text(), new Promise<never>((_resolve, reject) => {
    setTimeout(() => { reject(new Error('timed out reading the SSE response')) }, WAIT_MS).unref()
  })])
  const messages: Json[] = []
  for (const block of text.split('\n\n')) {
    const data = block.split('\n').filter(line => line.startsWith('data:')).map(line => line.slice(5).trimStart()).join('\n')
    if (data !== '') messages.push(JSON.parse(data) as Json)
  }
  return messages
}

test('logs sent while serving a call arrive on that call\'s stream before its result, tagged <upstream>/<logger>', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [stdioUpstream('up')])
  const init = await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
  const initialized = await init.json() as { result: { capabilities: Json } }
  assert.deepEqual(initialized.result.capabilities.logging, {}, 'the gateway declares logging')
  const headers = { 'mcp-session-id': init.headers.get('mcp-session-id') ?? assert.fail('no session id'), 'mcp-protocol-version': '2025-11-25' }

  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'up__log', arguments: { count: 3, text: 'step' } } }, headers)
  assert.equal(res.headers.get('content-type'), 'text/event-stream')
  const messages = await readSse(res)
  assert.deepEqual(messages.map(m => m.method ?? `result ${String(m.id)}`), ['notifications/message', 'notifications/message', 'notifications/message', 'result 2'])
  assert.deepEqual(messages.slice(0, 3).map(m => m.params), [1, 2, 3].map(i => ({ level: 'info', logger: 'up/fixture', data: `step ${i}` })))
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_notifications_relayed_total', { method: 'notifications/message' }), 3)

  // The SDK client sees the same: the logs are there by the time the call resolves.
  const client = await connectClient(t, gw.url)
  const logs = logsOf(client)
  assert.equal((await call(client, 'up__log', { count: 2, level: 'error', text: 'sdk' })).text, 'logged 2')
  assert.deepEqual(logs, [{ level: 'error', logger: 'up/fixture', data: 'sdk 1' }, { level: 'error', logger: 'up/fixture', data: 'sdk 2' }])
})

test('logging/setLevel applies per session: A at warning stops seeing info while B, with no level, still gets it', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [stdioUpstream('up')])
  const a = await connectClient(t, gw.url)
  const b = await connectClient(t, gw.url)
  const logsA = logsOf(a)
  const logsB = logsOf(b)
  await a.setLoggingLevel('warning')
  await assert.rejects(a.request({ method: 'logging/setLevel', params: { level: 'loud' as 'info' } }), (error: unknown) => (error as { code?: number }).code === -32602)
  // B is owed every message, so the shared upstream must send them all; the gateway filters for A.
  await waitFor(async () => await upstreamLevel(b, 'up__stats') === 'debug', 'the upstream to be set to debug', WAIT_MS)

  await call(a, 'up__log', { count: 2, level: 'info', text: 'a-info' })
  await call(a, 'up__log', { count: 1, level: 'error', text: 'a-error' })
  assert.deepEqual(logsA.map(l => l.data), ['a-error 1'], 'A only sees what passes warning')
  await call(b, 'up__log', { count: 2, level: 'info', text: 'b-info' })
  assert.deepEqual(logsB.map(l => l.data), ['b-info 1', 'b-info 2'], 'B set no level, so it sees info')
})

test('the shared upstream is asked for the most verbose level any session wants', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [stdioUpstream('up')])
  const a = await connectClient(t, gw.url)
  assert.equal(await upstreamLevel(a, 'up__stats'), null, 'nothing is sent before a client asks')
  await a.setLoggingLevel('error')
  await waitFor(async () => await upstreamLevel(a, 'up__stats') === 'error', 'the upstream to be set to error', WAIT_MS)
  const b = await connectClient(t, gw.url)
  await b.setLoggingLevel('notice')
  await waitFor(async () => await upstreamLevel(a, 'up__stats') === 'notice', 'the upstream to be set to notice', WAIT_MS)
  await a.setLoggingLevel('debug')
  await waitFor(async () => await upstreamLevel(a, 'up__stats') === 'debug', 'the upstream to be set to debug', WAIT_MS)
})

test('isolation: session: a session\'s level reaches its own upstream connection, even one opened after setLevel', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [stdioUpstream('iso', { isolation: 'session' })])
  const a = await connectClient(t, gw.url)
  const b = await connectClient(t, gw.url)
  await a.setLoggingLevel('critical')
  assert.equal(await upstreamLevel(a, 'iso__stats'), 'critical', 'applied when A\'s connection came up')
  assert.equal(await upstreamLevel(b, 'iso__stats'), null, 'B\'s own connection was never set')
  await b.setLoggingLevel('notice')
  await waitFor(async () => await upstreamLevel(b, 'iso__stats') === 'notice', 'B\'s connection to be set to notice', WAIT_MS)
  assert.equal(await upstreamLevel(a, 'iso__stats'), 'critical', 'A\'s connection keeps its own level')
})

test('a shared upstream\'s log outside any call reaches every session whose level passes, on its GET stream', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [stdioUpstream('up')])
  const a = await connectClient(t, gw.url)
  const b = await connectClient(t, gw.url)
  const c = await connectClient(t, gw.url)
  const [logsA, logsB, logsC] = [logsOf(a), logsOf(b), logsOf(c)]
  await c.setLoggingLevel('error')
  await streamsOpen(gw, 3)

  assert.equal((await call(a, 'up__log_later', { delayMs: LATER_MS, text: 'later', level: 'warning' })).text, `will log in ${LATER_MS} ms`)
  const expected = { level: 'warning', logger: 'up/fixture', data: 'later' }
  // B made no call: only its GET stream can carry the log to it.
  await waitFor(() => logsB.length === 1, 'B to receive the log', WAIT_MS)
  await waitFor(() => logsA.length === 1, 'A to receive the log', WAIT_MS)
  assert.deepEqual([logsA, logsB], [[expected], [expected]])

  await call(a, 'up__log_later', { delayMs: LATER_MS, text: 'loud', level: 'error' })
  await waitFor(() => logsC.length === 1 && logsB.length === 2, 'B and C to receive the error', WAIT_MS)
  assert.deepEqual(logsC, [{ level: 'error', logger: 'up/fixture', data: 'loud' }], 'C at error saw only the error')
})

test('isolation: session: a log from a session\'s own connection outside any call reaches that session\'s GET stream', { timeout: 30_000 }, async (t) => {
  const gw = await gatewayWith(t, [stdioUpstream('iso', { isolation: 'session' })])
  const a = await connectClient(t, gw.url)
  const b = await connectClient(t, gw.url)
  const [logsA, logsB] = [logsOf(a), logsOf(b)]
  await streamsOpen(gw, 2)
  await call(b, 'iso__counter')
  await call(a, 'iso__log_later', { delayMs: LATER_MS, text: 'mine' })
  await waitFor(() => logsA.length === 1, 'A to receive its log', WAIT_MS)
  assert.deepEqual(logsA, [{ level: 'info', logger: 'iso/fixture', data: 'mine' }])
  await call(b, 'iso__log', { count: 1, text: 'b' })
  assert.deepEqual(logsB.map(l => l.data), ['b 1'], 'B never saw A\'s log')
})
