import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { AUDIENCE, ISSUER, startJwksServer, type JwksServer } from '../helpers/jwks-server.ts'
import { connectClient, metricValue, rawPost, scrapeMetrics, startGateway, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

const METADATA_URL = 'https://gw.example.com/.well-known/oauth-protected-resource/mcp'
const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }

async function gateway (t: TestContext, jwks: JwksServer): Promise<RunningGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    auth: { jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, rolesClaim: 'realm_access.roles', jwksTimeoutMs: 1000 }, scopes: ['mcp:tools'] },
    policies: { default: 'deny', rules: [{ principals: ['role:dev'], tools: ['web__*'], effect: 'allow' }, { principals: ['*'], tools: ['web__whoami'], effect: 'allow' }] }
  }))
  await waitReady(gw)
  return gw
}

test('a JWT from the configured issuer opens a session; its roles claim drives the policy', async (t) => {
  const jwks = await startJwksServer(t)
  const gw = await gateway(t, jwks)
  const dev = await connectClient(t, gw.url, {}, { authorization: `Bearer ${await jwks.sign({ sub: 'dana', realm_access: { roles: ['dev'] } })}` })
  const guest = await connectClient(t, gw.url, {}, { authorization: `Bearer ${await jwks.sign({ sub: 'gus', realm_access: { roles: [] } }, { key: 'ec' })}` })
  assert.ok((await dev.listTools()).tools.length > 2)
  assert.deepEqual((await guest.listTools()).tools.map(tool => tool.name), ['web__whoami'])
  const principals = [...gw.gateway.sessions.all()].map(s => `${s.principal.via}:${s.principal.id}:${s.principal.roles.join(',')}`).sort()
  assert.deepEqual(principals, ['jwt:dana:dev', 'jwt:gus:'])
  assert.equal(jwks.fetches, 1, 'signing keys are fetched once and cached')
})

test('expired, foreign-signed, wrong-audience and wrong-issuer tokens get 401 with invalid_token and the metadata URL', async (t) => {
  const jwks = await startJwksServer(t)
  const gw = await gateway(t, jwks)
  const tokens = {
    expired: await jwks.sign({}, { expiresIn: '-10m' }),
    foreign: await jwks.sign({}, { key: 'foreign', kid: 'rsa-1' }),
    audience: await jwks.sign({}, { audience: 'https://other.example.com/mcp' }),
    issuer: await jwks.sign({}, { issuer: 'https://evil.example.com' }),
    noExpiry: await jwks.sign({}, { expiresIn: null })
  }
  for (const [what, token] of Object.entries(tokens)) {
    const res = await rawPost(gw.url, INITIALIZE, { authorization: `Bearer ${token}` })
    assert.equal(res.status, 401, what)
    const challenge = res.headers.get('www-authenticate') ?? ''
    assert.match(challenge, /^Bearer realm="switchboard", error="invalid_token", error_description="[^"]+"/, what)
    assert.match(challenge, new RegExp(`resource_metadata="${METADATA_URL}"`), what)
    assert.match(challenge, /scope="mcp:tools"/, what)
    assert.ok(!challenge.includes(token) && !(await res.text()).includes(token), `${what}: the token is not echoed`)
  }
  const none = await rawPost(gw.url, INITIALIZE)
  assert.equal(none.headers.get('www-authenticate'), `Bearer realm="switchboard", resource_metadata="${METADATA_URL}", scope="mcp:tools"`)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_auth_failures_total', { reason: 'expired' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_auth_failures_total', { reason: 'invalid_token' }), 4)
  const everything = JSON.stringify(gw.logs) + metrics
  for (const token of Object.values(tokens)) assert.ok(!everything.includes(token), 'no token in logs or metrics')
})

test('RFC 9728 protected-resource metadata names the authorization server, at the root and path-suffixed URLs, without a token', async (t) => {
  const jwks = await startJwksServer(t)
  const gw = await gateway(t, jwks)
  for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
    const res = await fetch(`${gw.baseUrl}${path}`)
    assert.equal(res.status, 200, path)
    assert.match(res.headers.get('content-type') ?? '', /application\/json/)
    const doc = await res.json() as Record<string, unknown>
    assert.equal(doc.resource, AUDIENCE)
    assert.deepEqual(doc.authorization_servers, [ISSUER])
    assert.deepEqual(doc.bearer_methods_supported, ['header'])
    assert.deepEqual(doc.scopes_supported, ['mcp:tools'])
  }
})

test('when the identity provider\'s keys cannot be fetched, the gateway answers 503 rather than blaming the token', async (t) => {
  const jwks = await startJwksServer(t)
  jwks.respondWith('error')
  const gw = await gateway(t, jwks)
  const res = await rawPost(gw.url, INITIALIZE, { authorization: `Bearer ${await jwks.sign()}` })
  assert.equal(res.status, 503)
  assert.ok(res.headers.get('retry-after') !== null)
  jwks.respondWith('ok')
  // jose waits out its cooldown before fetching again; a fresh gateway shows the recovered path.
  const again = await gateway(t, jwks)
  assert.equal((await rawPost(again.url, INITIALIZE, { authorization: `Bearer ${await jwks.sign()}` })).status, 200)
})

test('a JWKS outage is logged once (warn, with the JWKS URL) and its end once (info), never with the token', async (t) => {
  const jwks = await startJwksServer(t)
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [],
    auth: { jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, jwksTimeoutMs: 1000, jwksCacheMs: 200 } }
  }))
  const token = await jwks.sign()
  const post = async (): Promise<number> => (await rawPost(gw.url, INITIALIZE, { authorization: `Bearer ${token}` })).status
  const outageLines = (): typeof gw.logs => gw.logs.filter(l => l.component === 'auth' && String(l.jwksUri) === jwks.url)
  assert.equal(await post(), 200)
  assert.deepEqual(outageLines(), [], 'nothing logged while the keys are fetched')

  await jwks.close()
  await new Promise(resolve => setTimeout(resolve, 250)) // the cached keys go stale: the next request fetches
  assert.deepEqual([await post(), await post(), await post()], [503, 503, 503])
  const down = outageLines()
  assert.equal(down.length, 1, 'one line per outage, not per request')
  assert.equal(down[0]?.level, 40)
  assert.match(down[0]?.msg ?? '', /signing keys \(JWKS\)/)

  await jwks.reopen()
  assert.equal(await post(), 200)
  assert.equal(await post(), 200)
  const lines = outageLines()
  assert.equal(lines.length, 2, 'and one line when it ends')
  assert.equal(lines[1]?.level, 30)
  assert.match(lines[1]?.msg ?? '', /fetched again/)
  assert.equal(lines[1]?.refused, 3)
  assert.ok(!JSON.stringify(gw.logs).includes(token), 'the token is never logged')
})
