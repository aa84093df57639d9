/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import WebSocket from 'ws'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { connectClient, metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
const ENV = { ...process.env, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob }
const bearer = (who: keyof typeof KEYS): Record<string, string> => ({ authorization: `Bearer ${KEYS[who]}` })

async function gateway (t: TestContext): Promise<RunningGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}', roles: ['dev'] }, { id: 'bob', key: '${BOB_KEY}' }] }
  }), ENV)
  await waitReady(gw)
  return gw
}

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }

test('without a valid API key every MCP endpoint answers 401 with a Bearer challenge', async (t) => {
  const gw = await gateway(t)
  const missing = await rawPost(gw.url, INITIALIZE)
  assert.equal(missing.status, 401)
  assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="switchboard"')
  const body = await missing.json() as { jsonrpc: string, id: null, error: { code: number, message: string } }
  assert.equal(body.id, null)
  assert.equal(typeof body.error.message, 'string')

  const wrong = await rawPost(gw.url, INITIALIZE, { authorization: 'Bearer not-a-key-of-anyone-at-all' })
  assert.equal(wrong.status, 401)
  assert.match(wrong.headers.get('www-authenticate') ?? '', /^Bearer realm="switchboard", error="invalid_token"/)
  for (const headers of [{ authorization: `Basic ${Buffer.from('alice:x').toString('base64')}` }, { authorization: `Bearer ${KEYS.alice.slice(0, -1)}` }]) {
    assert.equal((await rawPost(gw.url, INITIALIZE, headers)).status, 401)
  }
  // A key in the query string is never looked at.
  assert.equal((await rawPost(`${gw.url}?access_token=${KEYS.alice}`, INITIALIZE)).status, 401)
  assert.equal((await fetch(gw.url, { headers: { accept: 'text/event-stream' } })).status, 401)
  assert.equal((await fetch(`${gw.baseUrl}/sse`, { headers: { accept: 'text/event-stream' } })).status, 401)
  assert.equal((await fetch(`${gw.baseUrl}/messages?sessionId=x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 401)
  assert.equal((await fetch(gw.url, { method: 'DELETE' })).status, 401)

  // Health, readiness and metrics stay reachable for probes and scrapers.
  assert.equal((await fetch(`${gw.baseUrl}/healthz`)).status, 200)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.ok((metricValue(metrics, 'switchboard_auth_failures_total', { reason: 'missing' }) ?? 0) >= 4)
  assert.ok((metricValue(metrics, 'switchboard_auth_failures_total', { reason: 'unknown_key' }) ?? 0) >= 2)
  assert.ok(!metrics.includes(KEYS.alice.slice(0, -1)) && !JSON.stringify(gw.logs).includes(KEYS.alice.slice(0, -1)), 'a presented key is never logged')
})

test('a valid API key opens a session through the SDK client, and the principal is bound to that session', async (t) => {
  const gw = await gateway(t)
  const alice = await connectClient(t, gw.url, {}, bearer('alice'))
  assert.ok((await alice.listTools()).tools.length > 0)

  const { sessionId } = await rawInitialize(gw.url, '2025-11-25', bearer('alice'))
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }
  const as = (who: keyof typeof KEYS): Record<string, string> => ({ ...bearer(who), 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })
  const stolen = await rawPost(gw.url, list, as('bob'))
  assert.equal(stolen.status, 404, 'bob cannot use alice\'s session')
  const unknown = await rawPost(gw.url, list, { ...as('bob'), 'mcp-session-id': 'no-such-session' })
  assert.deepEqual(await stolen.json(), await unknown.json(), 'indistinguishable from an unknown session')
  assert.equal((await fetch(gw.url, { headers: { ...as('bob'), accept: 'text/event-stream' } })).status, 404)
  assert.equal((await fetch(gw.url, { method: 'DELETE', headers: as('bob') })).status, 404)
  const noKey = await rawPost(gw.url, list, { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })
  assert.equal(noKey.status, 401, 'the key is needed on every request, within a session too')
  const own = await rawPost(gw.url, list, as('alice'))
  assert.equal(own.status, 200)
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_auth_failures_total', { reason: 'session_principal' }), 3)
})

test('WebSocket upgrades are authenticated too, and the socket\'s session belongs to its principal', async (t) => {
  const gw = await gateway(t)
  const wsUrl = gw.url.replace('http:', 'ws:')
  const refused = new WebSocket(wsUrl, 'mcp')
  refused.on('error', () => {})
  const [, response] = await once(refused, 'unexpected-response') as [unknown, { statusCode: number, headers: Record<string, string> }]
  assert.equal(response.statusCode, 401)
  assert.match(response.headers['www-authenticate'] ?? '', /^Bearer realm="switchboard"/)
  refused.terminate()

  const ws = new WebSocket(wsUrl, 'mcp', { headers: bearer('alice') })
  t.after(() => { ws.terminate() })
  await once(ws, 'open')
  ws.send(JSON.stringify(INITIALIZE))
  const [data] = await once(ws, 'message') as [Buffer]
  const reply = JSON.parse(String(data)) as { result?: { protocolVersion: string } }
  assert.equal(reply.result?.protocolVersion, '2025-11-25')
  const session = [...gw.gateway.sessions.all()].find(s => s.transport === 'websocket')
  assert.equal(session?.principal.id, 'alice')
})

test('legacy SSE: the stream needs a key, and its messages must come from the same principal', async (t) => {
  const gw = await gateway(t)
  const controller = new AbortController()
  t.after(() => { controller.abort() })
  const stream = await fetch(`${gw.baseUrl}/sse`, { headers: { ...bearer('alice'), accept: 'text/event-stream' }, signal: controller.signal })
  assert.equal(stream.status, 200)
  const reader = stream.body?.getReader()
  assert.ok(reader)
  let text = ''
  while (!/data: (\S+)/.test(text)) {
    const { value, done } = await reader.read()
    if (done) break
    text += Buffer.from(value).toString()
  }
  const endpoint = /data: (\S+)/.exec(text)?.[1] ?? ''
  const post = async (headers: Record<string, string>): Promise<number> => (await fetch(new URL(endpoint, gw.baseUrl), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(INITIALIZE) })).status
  assert.equal(await post({}), 401)
  assert.equal(await post(bearer('bob')), 404)
  assert.equal(await post(bearer('alice')), 202)
})
