import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { CORS_MAX_AGE_S } from '../../src/http/cors.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, type RunningGateway } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'
const APP_ORIGIN = 'https://app.example.com'
const LOCAL_ORIGIN = 'http://localhost:5173'
const FOREIGN_ORIGIN = 'https://evil.example.com'
const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'browser', version: '1' } } }

async function gateway (t: TestContext): Promise<RunningGateway> {
  return await startGateway(t, JSON.stringify({
    upstreams: [],
    // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }] },
    http: { allowedOrigins: [APP_ORIGIN] }
  }), { ...process.env, ALICE_KEY: KEY })
}

/** What a browser sends before a cross-origin POST with a JSON body and a bearer token. */
async function preflight (url: string, origin: string, method = 'POST'): Promise<Response> {
  return await fetch(url, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type,mcp-protocol-version' }
  })
}

function listed (value: string | null): string[] {
  return (value ?? '').split(',').map(v => v.trim().toLowerCase()).filter(v => v !== '')
}

test('a preflight from a loopback or configured origin gets 204 with the methods, headers and max-age it needs, without a token', async (t) => {
  const gw = await gateway(t)
  for (const origin of [LOCAL_ORIGIN, APP_ORIGIN]) {
    const res = await preflight(gw.url, origin)
    assert.equal(res.status, 204, origin)
    assert.equal(res.headers.get('access-control-allow-origin'), origin, 'the origin is echoed, never *')
    assert.deepEqual(listed(res.headers.get('access-control-allow-methods')), ['get', 'post', 'delete', 'options'])
    const headers = listed(res.headers.get('access-control-allow-headers'))
    for (const name of ['content-type', 'authorization', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id', 'accept']) assert.ok(headers.includes(name), name)
    assert.equal(res.headers.get('access-control-max-age'), String(CORS_MAX_AGE_S))
    assert.ok(listed(res.headers.get('access-control-expose-headers')).includes('mcp-session-id'))
    assert.equal(res.headers.get('access-control-allow-credentials'), null, 'no cookies are involved')
    assert.ok(listed(res.headers.get('vary')).includes('origin'))
  }
  const sse = await preflight(new URL('/sse', gw.baseUrl).href, LOCAL_ORIGIN, 'GET')
  assert.equal(sse.status, 204)
  assert.deepEqual(listed(sse.headers.get('access-control-allow-methods')), ['get', 'options'])
  const messages = await preflight(new URL('/messages?sessionId=x', gw.baseUrl).href, LOCAL_ORIGIN)
  assert.equal(messages.status, 204)
  assert.deepEqual(listed(messages.headers.get('access-control-allow-methods')), ['post', 'options'])
})

test('a preflight from a foreign origin gets 403 and no CORS headers; its actual request is refused as before', async (t) => {
  const gw = await gateway(t)
  const res = await preflight(gw.url, FOREIGN_ORIGIN)
  assert.equal(res.status, 403)
  assert.equal(res.headers.get('access-control-allow-origin'), null)
  assert.equal(res.headers.get('access-control-allow-methods'), null)
  assert.equal(((await res.json()) as { error: { code: number } }).error.code, -32000)
  const post = await rawPost(gw.url, INITIALIZE, { origin: FOREIGN_ORIGIN, authorization: `Bearer ${KEY}` })
  assert.equal(post.status, 403)
  assert.equal(post.headers.get('access-control-allow-origin'), null)
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_http_rejections_total', { reason: 'origin' }), 2)
})

test('a cross-origin initialize gets Allow-Origin, Vary and Mcp-Session-Id exposed; the session\'s SSE stream and a 401 carry them too', async (t) => {
  const gw = await gateway(t)
  const res = await rawPost(gw.url, INITIALIZE, { origin: APP_ORIGIN, authorization: `Bearer ${KEY}` })
  assert.equal(res.status, 200)
  const sessionId = res.headers.get('mcp-session-id')
  assert.ok(sessionId !== null && sessionId !== '')
  assert.equal(res.headers.get('access-control-allow-origin'), APP_ORIGIN)
  assert.ok(listed(res.headers.get('vary')).includes('origin'))
  const exposed = listed(res.headers.get('access-control-expose-headers'))
  for (const name of ['mcp-session-id', 'mcp-protocol-version', 'www-authenticate']) assert.ok(exposed.includes(name), name)
  await res.body?.cancel()

  // The GET stream is written straight to the socket; the headers must reach it all the same.
  const controller = new AbortController()
  const stream = await fetch(gw.url, {
    headers: { origin: APP_ORIGIN, authorization: `Bearer ${KEY}`, accept: 'text/event-stream', 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
    signal: controller.signal
  })
  assert.equal(stream.status, 200)
  assert.equal(stream.headers.get('content-type'), 'text/event-stream')
  assert.equal(stream.headers.get('access-control-allow-origin'), APP_ORIGIN)
  assert.ok(listed(stream.headers.get('access-control-expose-headers')).includes('mcp-session-id'))
  controller.abort()

  const unauthorized = await rawPost(gw.url, INITIALIZE, { origin: LOCAL_ORIGIN })
  assert.equal(unauthorized.status, 401)
  assert.equal(unauthorized.headers.get('access-control-allow-origin'), LOCAL_ORIGIN, 'a page can read the challenge')
  assert.ok(unauthorized.headers.get('www-authenticate')?.startsWith('Bearer'))
})

test('without an Origin (every non-browser client) nothing changes but Vary: Origin; OPTIONS alone is 204 with Allow, PUT stays 405', async (t) => {
  const gw = await startGateway(t, 'upstreams: []\n')
  const res = await rawPost(gw.url, INITIALIZE)
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('access-control-allow-origin'), null)
  assert.ok(listed(res.headers.get('vary')).includes('origin'))
  await res.body?.cancel()
  const options = await fetch(gw.url, { method: 'OPTIONS' })
  assert.equal(options.status, 204)
  assert.equal(options.headers.get('allow'), 'GET, POST, DELETE, OPTIONS')
  assert.equal(options.headers.get('access-control-allow-methods'), null, 'not a preflight')
  const put = await fetch(gw.url, { method: 'PUT' })
  assert.equal(put.status, 405)
  assert.equal(put.headers.get('allow'), 'GET, POST, DELETE, OPTIONS')
  await rawInitialize(gw.url, '2025-11-25', { origin: LOCAL_ORIGIN })
})

test('the protected-resource metadata is readable from any origin', async (t) => {
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [],
    auth: { jwt: { issuer: 'https://idp.example.com', audience: 'https://gw.example.com/mcp', jwksUri: 'http://127.0.0.1:9/jwks.json' } }
  }))
  const res = await fetch(new URL('/.well-known/oauth-protected-resource/mcp', gw.baseUrl), { headers: { origin: FOREIGN_ORIGIN } })
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('access-control-allow-origin'), '*')
})
