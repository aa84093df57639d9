import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { CODE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../fixtures/authorization-server.ts'
import { startProtectedUpstream } from '../fixtures/protected-upstream.ts'
import { consent } from '../helpers/consent.ts'
import { freePort } from '../helpers/free-port.ts'
import { connectAsBrowser, GatewayBrowser } from '../helpers/gateway-browser.ts'
import { codeFlow } from '../helpers/oauth-flows.ts'
import { metricValue, scrapeMetrics, startGateway, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// Who is at the browser, tried as an attacker would: a real authorization server in front of a real
// protected upstream (whoami answers the token's subject), a second real OpenID provider as the
// company's identity provider (JWT principals, and the gateway's browser sign-in), SDK clients as
// each user's agent, and a scripted browser per person.

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh', mallory: 'mallory-key-0123456789abcd' }
const AUDIENCE = 'https://gateway.test/mcp'
const BROWSER_CLIENT = { clientId: 'switchboard-browser', clientSecret: 'switchboard-browser-secret' }
const IDP_REDIRECT = 'http://127.0.0.1:9/agent-callback'

interface World { as: AuthorizationServer, idp: AuthorizationServer, gw: RunningGateway }

async function world (t: TestContext, http: Record<string, unknown> = {}): Promise<World> {
  const as = await startAuthorizationServer(t)
  const idp = await startAuthorizationServer(t, { redirectUris: [IDP_REDIRECT] })
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  const port = await freePort()
  const publicUrl = `http://127.0.0.1:${port}`
  as.registerClient({ client_id: CODE_CLIENT.clientId, client_secret: CODE_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/oauth/callback`], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })
  idp.registerClient({ client_id: BROWSER_CLIENT.clientId, client_secret: BROWSER_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/connect/signin/callback`], grant_types: ['authorization_code'], response_types: ['code'] })
  const gw = await startGateway(t, JSON.stringify({
    listen: { host: '127.0.0.1', port },
    http: { publicUrl, ...http },
    auth: {
      apiKeys: Object.entries(KEYS).map(([id, key]) => ({ id, key })),
      jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUri: `${idp.url}/jwks`, browser: BROWSER_CLIENT }
    },
    tokens: { encryptionKey: randomBytes(32).toString('base64') },
    audit: { enabled: true },
    upstreams: [{ name: 'prot', transport: 'streamable-http', url: upstream.mcpUrl, auth: { type: 'oauth', clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret } }]
  }))
  await waitReady(gw)
  return { as, idp, gw }
}

async function agent (t: TestContext, gw: RunningGateway, bearer: string): Promise<Client> {
  const c = new Client({ name: 'agent', version: '1.0.0' })
  await c.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

/** A JWT principal's bearer token, issued by the company's identity provider to `login`. */
async function companyToken (idp: AuthorizationServer, login: string): Promise<string> {
  return (await codeFlow(idp, { login, redirectUri: IDP_REDIRECT, resource: AUDIENCE })).access_token
}

interface CallOutcome { sub?: unknown, code?: number, message?: string, url?: string }

/** whoami through the gateway: the upstream account the call ran as, or the error (and the connect link of a -32042). */
async function whoami (c: Client): Promise<CallOutcome> {
  try {
    const result = await c.callTool({ name: 'prot__whoami', arguments: {} }) as { structuredContent?: { sub?: unknown } }
    return { sub: result.structuredContent?.sub }
  } catch (err: unknown) {
    const e = err as { code?: number, message?: string, data?: { elicitations?: Array<{ url?: string }> } }
    return { code: e.code, message: e.message, url: e.data?.elicitations?.[0]?.url }
  }
}

async function linkOf (c: Client): Promise<string> {
  const outcome = await whoami(c)
  assert.equal(outcome.code, -32042, JSON.stringify(outcome))
  return String(outcome.url)
}

const connectEvents = (gw: RunningGateway): Array<Record<string, unknown>> => gw.logs.filter(l => l.component === 'audit' && l.event === 'connect')

test('phishing: mallory\'s link opened by bob binds nothing, at any step; the AS page she forwards completes nothing in his browser', async (t) => {
  const { as, gw } = await world(t)
  const mallory = await agent(t, gw, KEYS.mallory)
  const link = await linkOf(mallory)

  // Bob opens it: no credential, so the gateway asks who he is (no redirect anywhere).
  const bob = new GatewayBrowser()
  const first = await bob.get(link)
  assert.equal(first.status, 200)
  assert.equal(first.location, undefined)
  // He proves he is bob: the page says the link is not his, and offers nothing to press.
  const refused = await bob.proveAndOpen(link, { apiKey: KEYS.bob })
  assert.equal(refused.status, 403)
  assert.match(refused.body, /not for you/)
  assert.deepEqual(refused.forms, [])
  // Pressing on anyway: a POST of the link from his (proven) browser, with a genuine CSRF token of his own.
  const own = await bob.get(`${gw.baseUrl}/connect/prot`)
  const form = own.forms[0] ?? assert.fail('bob\'s own confirmation page')
  const forced = await bob.submit(form, { link: new URL(link).searchParams.get('link') ?? '' })
  assert.equal(forced.status, 403)
  assert.equal(as.accounts.has('bob'), false, 'bob never reached the authorization server')

  // The mirror: mallory starts for herself and forwards the authorization server's page; bob signs in there as himself.
  const authorize = await new GatewayBrowser().startConnect(link, { apiKey: KEYS.mallory })
  const callback = await consent(authorize, { login: 'bob' })
  const landed = await bob.get(callback)
  assert.equal(landed.status, 403)
  assert.match(landed.body, /started in another browser/)

  const after = await whoami(mallory)
  assert.notEqual(after.sub, 'bob')
  assert.equal(after.code, -32042, 'mallory is still unconnected')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.ok((metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'identity_mismatch' }) ?? 0) >= 3)
  assert.equal(metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'completed' }) ?? 0, 0)
  assert.ok(connectEvents(gw).some(e => e.outcome === 'identity_mismatch' && e.principal === 'mallory'))
  assert.doesNotMatch(JSON.stringify(gw.logs), /link=ey/, 'no link in any log line')
})

test('a link is good once: opened again, by its owner or anyone, it changes nothing; reconnecting yourself replaces your grant', async (t) => {
  const { gw } = await world(t)
  const alice = await agent(t, gw, KEYS.alice)
  const link = await linkOf(alice)
  assert.equal((await connectAsBrowser(link, { login: 'alice-gh', proof: { apiKey: KEYS.alice } })).status, 200)
  assert.equal((await whoami(alice)).sub, 'alice-gh')

  for (const proof of [{ apiKey: KEYS.alice }, { apiKey: KEYS.mallory }]) {
    const page = await new GatewayBrowser().proveAndOpen(link, proof)
    assert.equal(page.status, 400)
    assert.match(page.body, /already been used/)
  }
  // The confirmation page of the first opening, pressed again, is spent too.
  assert.equal((await whoami(alice)).sub, 'alice-gh')

  // Alice reconnects herself from her own browser, with another account at the upstream.
  const again = await connectAsBrowser(`${gw.baseUrl}/connect/prot`, { login: 'alice-other', proof: { apiKey: KEYS.alice } })
  assert.equal(again.status, 200)
  const reconnected = await whoami(alice)
  assert.equal(reconnected.sub, 'alice-other', JSON.stringify(reconnected))

  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'link_reused' }), 2)
  assert.equal(metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'completed' }), 2)
  assert.ok((metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'proven' }) ?? 0) >= 2)
  assert.equal(metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'started' }), 2)
  assert.deepEqual(connectEvents(gw).filter(e => e.outcome === 'completed').map(e => e.principal), ['alice', 'alice'])
})

test('a JWT principal proves itself by signing in at the identity provider; someone signed in as another subject is refused', async (t) => {
  const { idp, gw } = await world(t, { connect: { apiKeys: 'refuse' } })
  const carol = await agent(t, gw, await companyToken(idp, 'carol'))
  const link = await linkOf(carol)

  const dave = await new GatewayBrowser().proveAndOpen(link, { idpLogin: 'dave' })
  assert.equal(dave.status, 403)
  assert.match(dave.body, /signed in as dave/)

  const page = await connectAsBrowser(link, { login: 'carol-gh', proof: { idpLogin: 'carol' } })
  assert.equal(page.status, 200, page.body)
  assert.equal((await whoami(carol)).sub, 'carol-gh')

  // http.connect.apiKeys: refuse: an API-key principal is told so, and given no link.
  const alice = await agent(t, gw, KEYS.alice)
  const refused = await whoami(alice)
  assert.equal(refused.url, undefined)
  assert.match(refused.message ?? '', /API-key principals cannot connect/)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'identity_mismatch' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'completed' }), 1)
})

test('the key form: a wrong key is refused and counted, and past ten a minute from one address every try is refused', async (t) => {
  const { gw } = await world(t)
  const alice = await agent(t, gw, KEYS.alice)
  const link = await linkOf(alice)
  const browser = new GatewayBrowser()
  const statuses: number[] = []
  for (let i = 0; i < 11; i++) {
    const page = await browser.get(link)
    const form = page.forms[0] ?? assert.fail('the key form')
    statuses.push((await browser.submit(form, { key: `wrong-key-${i}-0123456789` })).status)
  }
  assert.deepEqual(statuses, [...Array(10).fill(401), 429])
  const page = await browser.get(link)
  assert.equal((await browser.submit(page.forms[0] ?? assert.fail('form'), { key: KEYS.alice })).status, 429, 'a right key too, while throttled')
  // A form posted without this browser's CSRF token is refused.
  const bare = await fetch(`${gw.baseUrl}/connect/signin/key`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ upstream: 'prot', key: KEYS.alice }).toString() })
  assert.equal(bare.status, 403)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_connect_flows_total', { upstream: 'prot', outcome: 'denied' }), 10)
  assert.doesNotMatch(JSON.stringify(gw.logs), /wrong-key-|alice-key-/, 'no key in any log line')
})
