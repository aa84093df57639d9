import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { CODE_CLIENT, EXCHANGE_CLIENT, TOKEN_EXCHANGE_GRANT, startAuthorizationServer } from '../fixtures/authorization-server.ts'
import { startProtectedUpstream } from '../fixtures/protected-upstream.ts'
import { connectAsBrowser } from '../helpers/gateway-browser.ts'
import { freePort } from '../helpers/free-port.ts'
import { metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// Issue 37: one user's credential trouble is that user's alone. A refused token exchange or a
// disconnected account fails that caller's calls, and only theirs: the upstream's circuit breaker
// (set to open after two failures here, so that a single background reconnect loop would open it)
// stays closed, and every other caller of the upstream is served throughout.

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh' }
/** A breaker that two failures open, for a minute: any failure counted for the upstream shows. */
const HAIR_TRIGGER = { failureThreshold: 2, windowMs: 60_000, cooldownMs: 60_000 }
/** Rounds of calls in a window, and the pause between them (long enough for reconnect attempts the old code made). */
const ROUNDS = 5
const PAUSE_MS = 500

const subOf = (result: unknown): unknown => (result as { structuredContent?: { sub?: unknown } }).structuredContent?.sub
const errorOf = (result: { isError?: unknown, _meta?: Record<string, unknown> }): { code?: string, retryAfterMs?: number } =>
  (result.isError === true ? result._meta?.['switchboard/error'] : undefined) as { code?: string, retryAfterMs?: number } ?? {}

async function clientWith (t: TestContext, url: string, bearer: string): Promise<Client> {
  const c = new Client({ name: 'agent', version: '1.0.0' })
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

/**
 * Connects `login`'s account at the upstream: the call's -32042 link, then the browser's consent.
 * The one place this file depends on how a browser connects: the user proves who they are with
 * their API key on the gateway's page, then consents as `login`.
 */
async function connectUser (c: Client, tool: string, login: keyof typeof KEYS): Promise<void> {
  const err = await c.callTool({ name: tool, arguments: {} }).then(() => undefined, (e: unknown) => e as { code?: number, data?: { elicitations?: Array<{ url: string }> } })
  assert.equal(err?.code, -32042, 'a call before connecting asks to connect')
  const page = await connectAsBrowser(String(err?.data?.elicitations?.[0]?.url), { login, proof: { apiKey: KEYS[login] } })
  assert.equal(page.status, 200, page.body)
}

async function circuitOf (gw: RunningGateway, upstream: string): Promise<{ closed: number | undefined, opened: number }> {
  const metrics = await scrapeMetrics(gw.baseUrl)
  return {
    closed: metricValue(metrics, 'switchboard_circuit_breaker_state', { upstream, state: 'closed' }),
    opened: metricValue(metrics, 'switchboard_circuit_breaker_transitions_total', { upstream, to: 'open' }) ?? 0
  }
}

test('a caller whose token exchange the authorization server refuses fails alone: one exchange per call at most and none while backing off, no reconnects in the background, the breaker stays closed, and another caller is served throughout', async (t) => {
  const as = await startAuthorizationServer(t)
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  // The gateway tolerates 5 minutes of clock skew on callers' JWTs, the authorization server none:
  // a JWT expired a minute ago gets in, and its exchange is refused (invalid_grant), as for a user
  // whose IdP session ended while their agent still holds the token.
  const gw = await startGateway(t, JSON.stringify({
    auth: { jwt: as.companyJwtConfig({ audience: 'https://gateway.test/mcp', clockToleranceMs: 300_000 }) },
    tokens: { encryptionKey: randomBytes(32).toString('base64') },
    upstreams: [{
      name: 'obo',
      transport: 'streamable-http',
      url: upstream.mcpUrl,
      circuitBreaker: HAIR_TRIGGER,
      auth: { type: 'token_exchange', issuer: as.issuer, clientId: EXCHANGE_CLIENT.clientId, clientSecret: EXCHANGE_CLIENT.clientSecret, resource: upstream.mcpUrl, scope: 'mcp:tools', retryAfterRefusalMs: 120_000 }
    }]
  }))
  await waitReady(gw)
  const carol = await clientWith(t, gw.url, await as.issueCompanyJwt('carol'))
  const erin = await clientWith(t, gw.url, await as.issueCompanyJwt('erin', { expiresIn: '-60s' }))
  assert.equal(subOf(await carol.callTool({ name: 'obo__whoami', arguments: {} })), 'carol')
  const exchanged = as.counts.grants[TOKEN_EXCHANGE_GRANT]

  const first = await erin.callTool({ name: 'obo__whoami', arguments: {} })
  assert.equal(errorOf(first).code, 'SB_ERR_UPSTREAM_TOKEN', JSON.stringify(first))
  assert.equal(as.counts.grantErrors[TOKEN_EXCHANGE_GRANT], 1, 'her call asked for one exchange')

  for (let round = 0; round < ROUNDS; round++) {
    // Time for the background reconnects the gateway used to make (11 in 8 s): none must come.
    await sleep(PAUSE_MS)
    const refused = await erin.callTool({ name: 'obo__whoami', arguments: {} })
    const err = errorOf(refused)
    assert.equal(err.code, 'SB_ERR_UPSTREAM_TOKEN', `round ${round}: the same code while backing off`)
    assert.equal(typeof err.retryAfterMs, 'number', `round ${round}: says when to retry`)
    assert.match(JSON.stringify(refused.content), /not asked again for this caller for another \d+ s/)
    assert.equal(subOf(await carol.callTool({ name: 'obo__whoami', arguments: {} })), 'carol', `round ${round}: carol is served`)
  }

  assert.equal(as.counts.grantErrors[TOKEN_EXCHANGE_GRANT], 1, 'no exchange while backing off, none in the background')
  assert.equal(as.counts.grants[TOKEN_EXCHANGE_GRANT], exchanged, 'carol\'s exchanged token was reused')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_auth_total', { upstream: 'obo', type: 'token_exchange', outcome: 'exchange_failed' }), 1 + ROUNDS, 'counted once per call')
  assert.equal(metricValue(metrics, 'switchboard_principal_connections', { upstream: 'obo' }), 1, 'her connection closed and was not reopened in the background')
  assert.deepEqual(await circuitOf(gw, 'obo'), { closed: 1, opened: 0 })
  assert.equal(gw.logs.filter(l => l.msg === 'upstream reconnect scheduled' && l.principal === 'erin').length, 0)
  assert.equal((await fetch(`${gw.baseUrl}/readyz`)).status, 200)
})

test('a user who disconnects leaves the breaker closed for everyone: her idle connection fails its health check, closes quietly without reconnecting, and bob keeps being served', async (t) => {
  const as = await startAuthorizationServer(t)
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  const port = await freePort()
  const publicUrl = `http://127.0.0.1:${port}`
  as.registerClient({ client_id: CODE_CLIENT.clientId, client_secret: CODE_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/oauth/callback`], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })
  // Health checks every second instead of 30 s: the check that finds her grant gone comes within the test.
  // (Each check waits at most that long for its answer: at 200 ms a busy CI machine failed one for want of an answer.)
  const gw = await startGateway(t, JSON.stringify({
    listen: { host: '127.0.0.1', port },
    http: { publicUrl },
    auth: { apiKeys: [{ id: 'alice', key: KEYS.alice }, { id: 'bob', key: KEYS.bob }] },
    tokens: { encryptionKey: randomBytes(32).toString('base64') },
    upstreams: [{ name: 'gh', transport: 'streamable-http', url: upstream.mcpUrl, healthCheckMs: 1000, circuitBreaker: HAIR_TRIGGER, auth: { type: 'oauth', clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret } }]
  }))
  await waitReady(gw)
  const alice = await clientWith(t, gw.url, KEYS.alice)
  const bob = await clientWith(t, gw.url, KEYS.bob)
  await connectUser(alice, 'gh__whoami', 'alice')
  await connectUser(bob, 'gh__whoami', 'bob')
  assert.equal(subOf(await alice.callTool({ name: 'gh__whoami', arguments: {} })), 'alice')
  assert.equal(subOf(await bob.callTool({ name: 'gh__whoami', arguments: {} })), 'bob')

  const connectRequired = async (): Promise<number> => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_upstream_auth_total', { upstream: 'gh', type: 'oauth', outcome: 'connect_required' }) ?? 0
  const before = await connectRequired()
  const disconnected = await fetch(`${gw.baseUrl}/connections/gh`, { method: 'DELETE', headers: { authorization: `Bearer ${KEYS.alice}` } })
  assert.equal(disconnected.status, 204)
  await waitFor(() => gw.logs.some(l => l.msg.startsWith('upstream connection closed: its caller has no usable credential') && l.principal === 'alice'), 'alice\'s connection to fail its health check and close', 15_000)

  for (let round = 0; round < ROUNDS; round++) {
    await sleep(PAUSE_MS)
    assert.equal(subOf(await bob.callTool({ name: 'gh__whoami', arguments: {} })), 'bob', `round ${round}: bob is served`)
  }
  assert.deepEqual(await circuitOf(gw, 'gh'), { closed: 1, opened: 0 })
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_principal_connections', { upstream: 'gh' }), 1, 'only bob\'s connection is open')
  const quietly = gw.logs.filter(l => l.principal === 'alice' && (l.msg === 'upstream reconnect scheduled' || l.msg === 'upstream failed its health check; reconnecting'))
  assert.deepEqual(quietly, [], 'no reconnect, no warning')
  // Her background check found the grant gone once, and closed her connection: nothing else was counted meanwhile.
  assert.equal(await connectRequired() - before, 1)
  // Her next call asks her to connect again, and connecting brings her back.
  await connectUser(alice, 'gh__whoami', 'alice')
  assert.equal(subOf(await alice.callTool({ name: 'gh__whoami', arguments: {} })), 'alice')
  assert.equal((await circuitOf(gw, 'gh')).opened, 0)
})
