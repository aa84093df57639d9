/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { runCli, tempConfig } from '../helpers/cli.ts'
import { AUTHORIZE_AT, ConnectFlowsDouble, GOOD_CODE } from '../helpers/connect-flows-double.ts'
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

function assertPrivatePage (res: Response): void {
  assert.equal(res.headers.get('cache-control'), 'no-store')
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer')
  assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/)
  assert.match(res.headers.get('content-type') ?? '', /^text\/html/)
}

test('/connect with a link redirects to the authorization URL for the link\'s principal; a bad link is a 400 page, an upstream without oauth a 404', async (t) => {
  const { gw, flows } = await setup(t)
  const { url, elicitationId } = await flows.linkFor('web', ALICE)
  const res = await fetch(url, { redirect: 'manual' })
  assert.equal(res.status, 302)
  assert.equal(res.headers.get('cache-control'), 'no-store')
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer')
  const location = new URL(res.headers.get('location') ?? '')
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
  const failing = await fetch(url, { redirect: 'manual' })
  assert.equal(failing.status, 502)
  assertPrivatePage(failing)
  assert.ok(!JSON.stringify(gw.logs).includes(new URL(url).searchParams.get('link') ?? '-'), 'the link is not logged')
})

test('/connect without a link authenticates as /mcp does: 401 without a key, a redirect for the caller with one', async (t) => {
  const { gw, flows } = await setup(t)
  assert.equal((await fetch(`${gw.baseUrl}/connect/web`, { redirect: 'manual' })).status, 401)
  const res = await fetch(`${gw.baseUrl}/connect/web`, { redirect: 'manual', headers: as('bob') })
  assert.equal(res.status, 302)
  const state = new URL(res.headers.get('location') ?? '').searchParams.get('state') ?? ''
  assert.equal(flows.states.get(state)?.principal.id, 'bob')
  // A foreign Host is refused before anything else, as on every route of the listener.
  assert.equal((await fetch(`${gw.baseUrl}/connect/web`, { redirect: 'manual', headers: { ...as('bob'), origin: 'https://evil.example' } })).status, 403)
})

test('/oauth/callback: a good state connects and says so; a bad state is a 400 page that echoes nothing; access_denied says consent was refused', async (t) => {
  const { gw, flows } = await setup(t)
  const authorize = await flows.authorizationUrl('web', ALICE)
  const state = authorize.searchParams.get('state') ?? ''

  const bad = await fetch(`${gw.baseUrl}/oauth/callback?code=${GOOD_CODE}&state=forged-state-value<script>`)
  assert.equal(bad.status, 400)
  assertPrivatePage(bad)
  const badPage = await bad.text()
  assert.match(badPage, /invalid or expired/)
  for (const echoed of [GOOD_CODE, 'forged-state-value', '<script>']) assert.ok(!badPage.includes(echoed), `${echoed} is not echoed`)

  const refused = await fetch(`${gw.baseUrl}/oauth/callback?error=access_denied&error_description=<b>no</b>&state=${state}`)
  assert.equal(refused.status, 400)
  const refusedPage = await refused.text()
  assert.match(refusedPage, /Consent was refused/)
  assert.ok(!refusedPage.includes('<b>') && !refusedPage.includes(state))

  const ok = await fetch(`${gw.baseUrl}/oauth/callback?code=${GOOD_CODE}&state=${state}`)
  assert.equal(ok.status, 200)
  assertPrivatePage(ok)
  const page = await ok.text()
  assert.match(page, /Connected to web\. You can close this page\./)
  assert.ok(!page.includes(state) && !page.includes(GOOD_CODE))
  assert.equal(flows.grants.size, 1)
  // Single use: the same callback again is a stale link.
  assert.equal((await fetch(`${gw.baseUrl}/oauth/callback?code=${GOOD_CODE}&state=${state}`)).status, 400)
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
