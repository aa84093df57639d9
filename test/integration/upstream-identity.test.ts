import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { CODE_CLIENT, SERVICE_CLIENT, EXCHANGE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../fixtures/authorization-server.ts'
import { startProtectedUpstream, type ProtectedUpstream } from '../fixtures/protected-upstream.ts'
import { connectAsBrowser } from '../helpers/gateway-browser.ts'
import { freePort } from '../helpers/free-port.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { metricValue, rawPost, scrapeMetrics, startGateway, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// Each user acts upstream as themselves, end to end: a real authorization server (oidc-provider), a
// real protected MCP server that verifies bearer tokens and answers whoami with the token's subject,
// the gateway as the OAuth client, and the official SDK client as each user's agent.

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh' }
const ENCRYPTION_KEY = randomBytes(32).toString('base64')

interface World { as: AuthorizationServer, upstream: ProtectedUpstream, gw: RunningGateway }

async function world (t: TestContext, auth: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Promise<World> {
  const as = await startAuthorizationServer(t)
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  const port = await freePort()
  const publicUrl = `http://127.0.0.1:${port}`
  await as.registerClient({ client_id: CODE_CLIENT.clientId, client_secret: CODE_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/oauth/callback`], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })
  const gw = await startGateway(t, JSON.stringify({
    listen: { host: '127.0.0.1', port },
    http: { publicUrl },
    auth: { apiKeys: [{ id: 'alice', key: KEYS.alice }, { id: 'bob', key: KEYS.bob }] },
    tokens: { encryptionKey: ENCRYPTION_KEY },
    upstreams: [{ name: 'gh', transport: 'streamable-http', url: upstream.mcpUrl, auth: { type: 'oauth', clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret, ...auth } }],
    ...extra
  }))
  await waitReady(gw)
  return { as, upstream, gw }
}

async function clientOf (t: TestContext, gw: RunningGateway, user: keyof typeof KEYS, capabilities: Record<string, unknown> = {}): Promise<Client> {
  const c = new Client({ name: `${user}-agent`, version: '1.0.0' }, { capabilities })
  await c.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${KEYS[user]}` } } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

const whoami = (result: unknown): unknown => (result as { structuredContent?: { sub?: unknown } }).structuredContent?.sub

/** The -32042 error of a call made before connecting: its URL elicitation. */
async function connectRequired (c: Client): Promise<{ url: string, elicitationId: string }> {
  const err = await c.callTool({ name: 'gh__whoami', arguments: {} }).then(() => undefined, (e: unknown) => e as { code?: number, data?: { elicitations?: Array<{ url: string, elicitationId: string, mode: string }> } })
  assert.ok(err !== undefined, 'a call before connecting must fail')
  assert.equal(err.code, -32042)
  const elicitation = err.data?.elicitations?.[0]
  assert.equal(elicitation?.mode, 'url')
  return { url: String(elicitation?.url), elicitationId: String(elicitation?.elicitationId) }
}

test('each user acts upstream as themselves: alice connects through a URL elicitation, bob through -32042, and whoami answers each one\'s own subject', async (t) => {
  const { upstream, gw } = await world(t)
  // Before anyone connected, the upstream's tools are not listed yet (nobody could list them): connect first.
  const alice = await clientOf(t, gw, 'alice', { elicitation: { url: {} } })
  const asked: Array<Record<string, unknown>> = []
  alice.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params as Record<string, unknown>
    asked.push(params)
    const page = await connectAsBrowser(String(params.url), { login: 'alice', proof: { apiKey: KEYS.alice } })
    assert.equal(page.status, 200, page.body)
    return { action: 'accept' }
  })
  const completed: string[] = []
  alice.setNotificationHandler('notifications/elicitation/complete', (n) => { completed.push(String(n.params.elicitationId)) })
  // Nobody has connected: no tools yet; the tool is called by name as an agent that knows it would.
  assert.equal(whoami(await alice.callTool({ name: 'gh__whoami', arguments: {} })), 'alice')
  assert.equal(asked.length, 1)
  assert.equal(asked[0]?.mode, 'url')
  assert.deepEqual(completed, [asked[0]?.elicitationId])

  // The catalog now has the upstream's tools, for bob too, who has not connected.
  const bob = await clientOf(t, gw, 'bob')
  assert.ok((await bob.listTools()).tools.some(tool => tool.name === 'gh__whoami'))
  const { url } = await connectRequired(bob)
  assert.match(url, new RegExp(`^${gw.baseUrl}/connect/gh\\?link=`))
  assert.equal((await connectAsBrowser(url, { login: 'bob', proof: { apiKey: KEYS.bob } })).status, 200)
  assert.equal(whoami(await bob.callTool({ name: 'gh__whoami', arguments: {} })), 'bob')
  assert.equal(whoami(await alice.callTool({ name: 'gh__whoami', arguments: {} })), 'alice')

  // The upstream saw only tokens the authorization server issued: never a gateway API key.
  assert.ok(upstream.seen.authorizations.length > 0)
  for (const value of upstream.seen.authorizations) {
    assert.ok(!value.includes(KEYS.alice) && !value.includes(KEYS.bob), 'a client credential reached the upstream')
  }
  assert.equal(upstream.counts.sessionMismatches, 0)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.ok((metricValue(metrics, 'switchboard_upstream_auth_total', { upstream: 'gh', type: 'oauth', outcome: 'connect_required' }) ?? 0) >= 1)
  assert.ok((metricValue(metrics, 'switchboard_upstream_auth_total', { upstream: 'gh', type: 'oauth', outcome: 'ok' }) ?? 0) >= 1)
  assert.equal(metricValue(metrics, 'switchboard_principal_connections', { upstream: 'gh' }), 2)
  // No token in any log line.
  const logs = JSON.stringify(gw.logs)
  assert.doesNotMatch(logs, /eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}/, 'a JWT in the logs')
})

test('a 2026-07-28 client gets input_required with the URL elicitation, and its retry after the connect runs the call', async (t) => {
  const { gw } = await world(t)
  const headers = { authorization: `Bearer ${KEYS.alice}` }
  const meta = { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } }
  const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'gh__whoami', arguments: {}, _meta: meta } }
  const first = await (await rawPost(gw.url, call, { ...headers, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'gh__whoami' })).text()
  const answer = JSON.parse(first.split('\n').filter(l => l.startsWith('data: ')).map(l => l.slice(6)).at(-1) ?? first) as { result?: Record<string, unknown> }
  assert.equal(answer.result?.resultType, 'input_required', first)
  const requests = answer.result?.inputRequests as Record<string, { method: string, params: { mode: string, url: string } }>
  const [key, request] = Object.entries(requests)[0] ?? []
  assert.equal(request?.method, 'elicitation/create')
  assert.equal(request?.params.mode, 'url')
  assert.equal((await connectAsBrowser(request?.params.url ?? '', { login: 'alice', proof: { apiKey: KEYS.alice } })).status, 200)
  const retry = { ...call, id: 2, params: { ...call.params, inputResponses: { [String(key)]: { action: 'accept' } }, requestState: answer.result?.requestState } }
  const second = await (await rawPost(gw.url, retry, { ...headers, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'gh__whoami' })).text()
  assert.match(second, /"sub":"alice"/)
})

test('a refused refresh token asks the user to connect again; disconnecting revokes at the authorization server', async (t) => {
  const { as, gw } = await world(t)
  const bob = await clientOf(t, gw, 'bob')
  assert.equal((await connectAsBrowser((await connectRequired(bob)).url, { login: 'bob', proof: { apiKey: KEYS.bob } })).status, 200)
  assert.equal(whoami(await bob.callTool({ name: 'gh__whoami', arguments: {} })), 'bob')
  // Bob disconnects: revoked at the authorization server, forgotten here; the next call asks again.
  const listed = await fetch(`${gw.baseUrl}/connections`, { headers: { authorization: `Bearer ${KEYS.bob}` } })
  const connections = (await listed.json()) as { connections: Array<{ upstream: string }> }
  assert.deepEqual(connections.connections.map(c => c.upstream), ['gh'])
  assert.doesNotMatch(JSON.stringify(connections), /eyJ/)
  const revoked = await fetch(`${gw.baseUrl}/connections/gh`, { method: 'DELETE', headers: { authorization: `Bearer ${KEYS.bob}` } })
  assert.equal(revoked.status, 204)
  assert.ok(as.counts.revocations >= 1)
  await connectRequired(bob)
})

test('a 401 to the opening of a user\'s connection (the token expired upstream a moment before the gateway reckoned) renews the token once and the call runs; a second 401 fails that call alone', async (t) => {
  const { as, upstream, gw } = await world(t)
  const [alice, bob] = [await clientOf(t, gw, 'alice'), await clientOf(t, gw, 'bob')]
  for (const [c, user] of [[alice, 'alice'], [bob, 'bob']] as const) {
    assert.equal((await connectAsBrowser((await connectRequired(c)).url, { login: user, proof: { apiKey: KEYS[user] } })).status, 200)
  }
  // Bob's connection opens on his next call: its first request (the server/discover probe) is refused once.
  const refreshes = as.counts.grants.refresh_token ?? 0
  upstream.failNext401(1)
  assert.equal(whoami(await bob.callTool({ name: 'gh__whoami', arguments: {} })), 'bob')
  assert.equal((as.counts.grants.refresh_token ?? 0) - refreshes, 1, 'one refresh after the 401')
  // Alice's is refused twice: renewed once, then her call fails with the 401, and nobody else's does.
  upstream.failNext401(2)
  const failed = await alice.callTool({ name: 'gh__whoami', arguments: {} })
  assert.equal(failed.isError, true, JSON.stringify(failed))
  assert.match(JSON.stringify(failed.content), /answered HTTP 401/)
  assert.equal((as.counts.grants.refresh_token ?? 0) - refreshes, 2, 'one renewal per refused connection, never a loop')
  assert.equal(whoami(await bob.callTool({ name: 'gh__whoami', arguments: {} })), 'bob')
  assert.equal(whoami(await alice.callTool({ name: 'gh__whoami', arguments: {} })), 'alice', 'her next call opens another connection')
})

test('client_credentials: one service token for every user; token_exchange: each JWT caller gets their own exchanged token and a bad exchange fails that caller alone', async (t) => {
  const as = await startAuthorizationServer(t)
  const company = as.company
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer }, acceptIssuers: [] })
  const gw = await startGateway(t, JSON.stringify({
    auth: { jwt: as.companyJwtConfig({ audience: 'https://gateway.test/mcp' }), apiKeys: [{ id: 'ci', key: KEYS.alice }] },
    tokens: { encryptionKey: ENCRYPTION_KEY },
    upstreams: [
      { name: 'svc', transport: 'streamable-http', url: upstream.mcpUrl, auth: { type: 'client_credentials', issuer: as.issuer, clientId: SERVICE_CLIENT.clientId, clientSecret: SERVICE_CLIENT.clientSecret, scope: 'mcp:tools' } },
      { name: 'obo', transport: 'streamable-http', url: upstream.mcpUrl, auth: { type: 'token_exchange', issuer: as.issuer, clientId: EXCHANGE_CLIENT.clientId, clientSecret: EXCHANGE_CLIENT.clientSecret, resource: upstream.mcpUrl, scope: 'mcp:tools' } }
    ]
  }))
  await waitReady(gw)
  const carol = await company.issueJwt('carol')
  const dave = await company.issueJwt('dave')
  const as_ = async (token: string): Promise<Client> => {
    const c = new Client({ name: 'agent', version: '1.0.0' })
    await c.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
    t.after(async () => { await c.close().catch(() => {}) })
    return c
  }
  const c1 = await as_(carol)
  const c2 = await as_(dave)
  const service = [whoami(await c1.callTool({ name: 'svc__whoami', arguments: {} })), whoami(await c2.callTool({ name: 'svc__whoami', arguments: {} }))]
  assert.equal(service[0], service[1], 'one service identity for every user')
  assert.equal(as.counts.grants.client_credentials, 1)
  assert.equal(whoami(await c1.callTool({ name: 'obo__whoami', arguments: {} })), 'carol')
  assert.equal(whoami(await c2.callTool({ name: 'obo__whoami', arguments: {} })), 'dave')
  // An API-key caller has no JWT to exchange: their error, nobody else's token.
  const ci = await as_(KEYS.alice)
  const refused = await ci.callTool({ name: 'obo__whoami', arguments: {} })
  assert.equal(refused.isError, true)
  assert.match(JSON.stringify(refused), /SB_ERR_UPSTREAM_TOKEN/, JSON.stringify(gw.logs.filter(l => l.msg === 'upstream connection failed')))
  assert.equal(whoami(await c1.callTool({ name: 'obo__whoami', arguments: {} })), 'carol')
  for (const value of upstream.seen.authorizations) {
    assert.ok(!value.includes(carol) && !value.includes(dave) && !value.includes(KEYS.alice), 'a client credential reached the upstream')
  }
})
