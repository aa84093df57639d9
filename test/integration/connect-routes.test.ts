/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { runCli, tempConfig } from '../helpers/cli.ts'
import { AUTHORIZE_AT, ConnectFlowsDouble, GOOD_CODE } from '../helpers/connect-flows-double.ts'
import { GatewayBrowser, type Page } from '../helpers/gateway-browser.ts'
import { startGateway, type RunningGateway } from '../helpers/start-gateway.ts'

// The connect flow's routes on the public listener, the admin API over the grants, and the CLI
// that asks it; over the test's own ConnectFlows double.

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
const ADMIN_TOKEN = 'admin-token-for-connect-route-tests'
const ENV = { ...process.env, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob, ADMIN_TOKEN }
const as = (who: keyof typeof KEYS): Record<string, string> => ({ authorization: `Bearer ${KEYS[who]}` })
const ALICE = { id: 'alice', roles: [], via: 'api-key' } as const
const BOB = { id: 'bob', roles: [], via: 'api-key' } as const

interface Setup { gw: RunningGateway, flows: ConnectFlowsDouble, adminUrl: string, yaml: string }

async function setup (t: TestContext): Promise<Setup> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const flows = new ConnectFlowsDouble(['web'])
  const yaml = JSON.stringify({
    upstreams: [
      { name: 'web', transport: 'streamable-http', url: web.url, auth: { type: 'oauth', clientId: 'switchboard' } },
      { name: 'plain', transport: 'streamable-http', url: web.url }
    ],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }, { id: 'bob', key: '${BOB_KEY}' }] },
    admin: { token: '${ADMIN_TOKEN}', listen: { host: '127.0.0.1', port: 0 } }
  })
  const clientMetadata = (upstream: string): Record<string, unknown> | undefined => upstream === 'web' ? { client_id: `${flows.base}/oauth/client/web`, client_name: 'Switchboard', redirect_uris: [`${flows.base}/oauth/callback`] } : undefined
  const gw = await startGateway(t, yaml, ENV, undefined, { connect: { flows, needsConnect: flows.needsConnect, clientMetadata } })
  flows.base = gw.baseUrl
  const admin = gw.admin
  assert.ok(admin !== undefined)
  await admin.listen({ host: '127.0.0.1', port: 0 })
  return { gw, flows, adminUrl: `http://127.0.0.1:${(admin.server.address() as { port: number }).port}`, yaml }
}

function assertPrivateHeaders ({ headers }: Pick<Page, 'headers'>): void {
  assert.equal(headers.get('cache-control'), 'no-store')
  assert.equal(headers.get('referrer-policy'), 'same-origin')
  assert.match(headers.get('content-security-policy') ?? '', /default-src 'none'/)
  assert.match(headers.get('content-type') ?? '', /^text\/html/)
}

function assertPrivatePage (res: Response): void {
  assert.equal(res.headers.get('cache-control'), 'no-store')
  assert.equal(res.headers.get('referrer-policy'), 'same-origin')
  assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/)
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/)
}

test('a link\'s GET never redirects to the authorization server: the key form, then a confirmation naming principal and upstream, whose POST alone redirects (303) for the link\'s principal', async (t) => {
  const { gw, flows } = await setup(t)
  const { url, elicitationId } = await flows.linkFor('web', ALICE)
  const browser = new GatewayBrowser()
  const opened = await browser.get(url)
  assert.equal(opened.status, 200, 'a page, not a redirect')
  assertPrivateHeaders(opened)
  assert.match(opened.body, /Prove it is you/)
  assert.ok(opened.forms[0]?.secret === 'key', 'the key form')
  assert.ok(!opened.body.includes(KEYS.alice))

  const confirmation = await browser.proveAndOpen(url, { apiKey: KEYS.alice })
  assert.equal(confirmation.status, 200)
  assert.match(confirmation.body, /Connect your account at web for alice/)
  assert.equal(flows.states.size, 0, 'nothing started before the button')
  const [form] = confirmation.forms
  assert.ok(form !== undefined && form.action.pathname === '/connect/web' && form.fields.csrf !== undefined)

  const sent = await browser.submit(form)
  assert.equal(sent.status, 303)
  const location = sent.location ?? new URL('about:blank')
  assert.equal(`${location.origin}${location.pathname}`, AUTHORIZE_AT)
  const started = flows.states.get(location.searchParams.get('state') ?? '')
  assert.deepEqual([started?.upstream, started?.principal.id, started?.elicitationId], ['web', 'alice', elicitationId])

  const bad = await fetch(`${gw.baseUrl}/connect/web?link=not-a-link-we-gave`, { redirect: 'manual' })
  assert.equal(bad.status, 400)
  assertPrivatePage(bad)
  assert.ok(!(await bad.text()).includes('not-a-link-we-gave'), 'the link is not echoed')
  // A link for another upstream is no link for this one.
  assert.equal((await fetch(`${gw.baseUrl}/connect/plain?link=${new URL(url).searchParams.get('link') ?? ''}`, { redirect: 'manual' })).status, 404)
  assert.equal((await fetch(`${gw.baseUrl}/connect/nope?link=x`, { redirect: 'manual' })).status, 404)

  // The authorization server unreachable: a page that says so, and the link in no log line.
  flows.authorizeFails = true
  const second = await flows.linkFor('web', ALICE)
  const page = await browser.get(second.url)
  const failing = await browser.submit(page.forms[0] ?? form)
  assert.equal(failing.status, 502)
  assert.ok(!JSON.stringify(gw.logs).includes(new URL(second.url).searchParams.get('link') ?? '-'), 'the link is not logged')
})

test('/connect without a link asks who is at the browser; a key proves it, and the flow is that principal\'s; a foreign Origin is refused', async (t) => {
  const { gw, flows } = await setup(t)
  const browser = new GatewayBrowser()
  const choice = await browser.get(`${gw.baseUrl}/connect/web`)
  assert.equal(choice.status, 200)
  assert.match(choice.body, /Sign in to connect web/)
  const confirmation = await browser.proveAndOpen(`${gw.baseUrl}/connect/web`, { apiKey: KEYS.bob })
  assert.match(confirmation.body, /Connect your account at web for bob/)
  const sent = await browser.submit(confirmation.forms[0] ?? assert.fail('no form'))
  assert.equal(sent.status, 303)
  assert.equal(flows.states.get(sent.location?.searchParams.get('state') ?? '')?.principal.id, 'bob')
  // A foreign Origin is refused before anything else, as on every route of the listener.
  assert.equal((await fetch(`${gw.baseUrl}/connect/web`, { method: 'POST', redirect: 'manual', headers: { origin: 'https://evil.example', 'content-type': 'application/x-www-form-urlencoded' }, body: 'csrf=x' })).status, 403)
})

test('/oauth/callback: the browser that started connects; another browser is refused and stores nothing; a bad state is a 400 page that echoes nothing; access_denied says consent was refused', async (t) => {
  const { gw, flows } = await setup(t)
  const start = async (): Promise<{ browser: GatewayBrowser, state: string }> => {
    const browser = new GatewayBrowser()
    const authorize = await browser.startConnect((await flows.linkFor('web', ALICE)).url, { apiKey: KEYS.alice })
    return { browser, state: authorize.searchParams.get('state') ?? '' }
  }
  const { browser, state } = await start()

  const bad = await browser.get(`${gw.baseUrl}/oauth/callback?code=${GOOD_CODE}&state=forged-state-value<script>`)
  assert.equal(bad.status, 400)
  assertPrivateHeaders(bad)
  assert.match(bad.body, /invalid or expired/)
  for (const echoed of [GOOD_CODE, 'forged-state-value', '<script>']) assert.ok(!bad.body.includes(echoed), `${echoed} is not echoed`)

  const denied = await start()
  const refused = await denied.browser.get(`${gw.baseUrl}/oauth/callback?error=access_denied&error_description=<b>no</b>&state=${denied.state}`)
  assert.equal(refused.status, 400)
  assert.match(refused.body, /Consent was refused/)
  assert.ok(!refused.body.includes('<b>') && !refused.body.includes(denied.state))

  // The page of the authorization server carried to another browser (no proof, or another one) completes nothing.
  const elsewhere = await start()
  const stranger = await fetch(`${gw.baseUrl}/oauth/callback?code=${GOOD_CODE}&state=${elsewhere.state}`)
  assert.equal(stranger.status, 403)
  assert.match(await stranger.text(), /started in another browser/)
  assert.equal(flows.grants.size, 0)

  const ok = await browser.get(`${gw.baseUrl}/oauth/callback?code=${GOOD_CODE}&state=${state}`)
  assert.equal(ok.status, 200)
  assertPrivateHeaders(ok)
  assert.match(ok.body, /Connected to web\. You can close this page\./)
  assert.ok(!ok.body.includes(state) && !ok.body.includes(GOOD_CODE))
  assert.equal(flows.grants.size, 1)
  // Single use: the same callback again is a stale link.
  assert.equal((await browser.get(`${gw.baseUrl}/oauth/callback?code=${GOOD_CODE}&state=${state}`)).status, 400)
  assert.ok(!JSON.stringify(gw.logs).includes(state) && !JSON.stringify(gw.logs).includes(GOOD_CODE), 'neither code nor state is logged')
})

test('/connections lists the caller\'s own grants as JSON or, for a browser, an HTML table; DELETE forgets one (204, then 404)', async (t) => {
  const { gw, flows } = await setup(t)
  flows.grant('web', ALICE, { scope: 'repo <read>' })
  flows.grant('web', BOB)
  assert.equal((await fetch(`${gw.baseUrl}/connections`)).status, 401)

  const json = await fetch(`${gw.baseUrl}/connections`, { headers: as('alice') })
  assert.equal(json.status, 200)
  assert.equal(json.headers.get('cache-control'), 'no-store')
  assert.deepEqual(await json.json(), { connections: [{ upstream: 'web', type: 'oauth', scope: 'repo <read>', expiresAt: '2030-01-01T00:00:00.000Z', obtainedAt: '2026-01-01T00:00:00.000Z', refreshable: true }] })

  const html = await fetch(`${gw.baseUrl}/connections`, { headers: { ...as('alice'), accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } })
  assertPrivatePage(html)
  const page = await html.text()
  assert.match(page, /<table>[\s\S]*<td>web<\/td><td>oauth<\/td><td>repo &lt;read&gt;<\/td>/)

  const gone = await fetch(`${gw.baseUrl}/connections/web`, { method: 'DELETE', headers: as('alice') })
  assert.equal(gone.status, 204)
  assert.deepEqual(flows.disconnects, ['web api-key:alice'])
  assert.equal((await fetch(`${gw.baseUrl}/connections/web`, { method: 'DELETE', headers: as('alice') })).status, 404)
  assert.deepEqual((await (await fetch(`${gw.baseUrl}/connections`, { headers: as('alice') })).json()), { connections: [] })
  assert.equal(flows.grants.size, 1, 'bob\'s grant stays')
})

test('/oauth/client/:upstream serves the client metadata document publicly; 404 for an upstream without one', async (t) => {
  const { gw } = await setup(t)
  const res = await fetch(`${gw.baseUrl}/oauth/client/web`)
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
  const doc = await res.json() as Record<string, unknown>
  assert.equal(doc.client_id, `${gw.baseUrl}/oauth/client/web`)
  assert.equal((await fetch(`${gw.baseUrl}/oauth/client/plain`)).status, 404)
})

test('no connect route is served when no upstream has oauth', async (t) => {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const flows = new ConnectFlowsDouble([])
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }] }), process.env, undefined, { connect: { flows } })
  for (const path of ['/connect/web', '/oauth/callback', '/connections']) assert.equal((await fetch(`${gw.baseUrl}${path}`)).status, 404, path)
})

test('admin: /admin/connections counts per upstream and type, principal keys only with ?principals=1; DELETE revokes one (204, 404); both need the admin token', async (t) => {
  const { flows, adminUrl } = await setup(t)
  flows.grant('web', ALICE)
  flows.grant('web', BOB)
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
  assert.equal((await fetch(`${adminUrl}/admin/connections`)).status, 401)
  assert.equal((await fetch(`${adminUrl}/admin/connections/web/api-key:alice`, { method: 'DELETE' })).status, 401)
  assert.equal(flows.grants.size, 2)

  const counts = await fetch(`${adminUrl}/admin/connections`, { headers: admin })
  assert.equal(counts.status, 200)
  assert.deepEqual(await counts.json(), { upstreams: [{ upstream: 'web', type: 'oauth', connections: 2 }] })
  const listed = await (await fetch(`${adminUrl}/admin/connections?principals=1`, { headers: admin })).json()
  assert.deepEqual(listed, { upstreams: [{ upstream: 'web', type: 'oauth', connections: 2, principals: ['api-key:alice', 'api-key:bob'] }] })

  assert.equal((await fetch(`${adminUrl}/admin/connections/web/${encodeURIComponent('api-key:alice')}`, { method: 'DELETE', headers: admin })).status, 204)
  assert.equal((await fetch(`${adminUrl}/admin/connections/web/${encodeURIComponent('api-key:alice')}`, { method: 'DELETE', headers: admin })).status, 404)
  assert.deepEqual([...flows.grants.values()].map(g => g.key.principal), ['api-key:bob'])
})

test('switchboard connections list and revoke talk to a running gateway\'s admin API', { timeout: 60_000 }, async (t) => {
  const { flows, adminUrl, yaml } = await setup(t)
  flows.grant('web', ALICE)
  flows.grant('web', BOB)
  const file = await tempConfig(t, yaml)
  const env = { ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob, ADMIN_TOKEN }

  const list = await runCli(['connections', 'list', '--config', file, '--admin-url', adminUrl, '--principals'], env)
  assert.equal(list.code, 0, list.stderr)
  assert.match(list.stdout, /^web\s+oauth\s+2 connection\(s\)\n {2}api-key:alice\n {2}api-key:bob\n$/)
  assert.ok(!list.stdout.includes(ADMIN_TOKEN))

  const revoked = await runCli(['connections', 'revoke', '--config', file, '--admin-url', adminUrl, 'web', 'api-key:alice'], env)
  assert.equal(revoked.code, 0, revoked.stderr)
  assert.equal(revoked.stdout, 'revoked web/api-key:alice\n')
  const again = await runCli(['connections', 'revoke', '--config', file, '--admin-url', adminUrl, 'web', 'api-key:alice'], env)
  assert.equal(again.code, 1)
  assert.match(again.stderr, /has no connection/)
  assert.deepEqual([...flows.grants.values()].map(g => g.key.principal), ['api-key:bob'])

  const usage = await runCli(['connections', 'revoke', '--config', file, 'web'], env)
  assert.equal(usage.code, 2)
  assert.match(usage.stderr, /revoke needs <upstream> <principal>/)
})
