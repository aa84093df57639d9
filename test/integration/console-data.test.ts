/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { CallEvent } from '../../src/observability/call-feed.ts'
import type { AdminUpstreamView } from '../../src/ops/admin-service.ts'
import type { AdminCallStats, AdminCatalogView, AdminPrincipalView, AdminSessionList, AdminToolCallResult } from '../../src/ops/console-views.ts'
import { readNamedEvents } from '../helpers/admin-console.ts'
import { AUDIENCE, ISSUER, startJwksServer } from '../helpers/jwks-server.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { rawPost, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
const ENV = { ...process.env, ADMIN_TOKEN, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob }

interface Console { gw: RunningGateway, admin: string, get: <T>(path: string) => Promise<{ status: number, body: T, text: string }>, send: <T>(method: string, path: string, body?: unknown) => Promise<{ status: number, body: T }> }

/**
 * A gateway with two stdio upstreams (fs, web), pinning on, alice (dev) allowed everything, bob (ops)
 * only web__whoami; `jwt` adds JWT auth beside the keys, `admin` more of the admin block.
 */
async function start (t: TestContext, extra: { jwt?: Record<string, unknown>, admin?: Record<string, unknown> } = {}): Promise<Console> {
  const dir = mkdtempSync(join(tmpdir(), 'console-data-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'fs', transport: 'stdio', ...fixtureCommand(['--name', 'fs']) }, { name: 'web', transport: 'stdio', ...fixtureCommand(['--name', 'web']) }],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}', roles: ['dev'] }, { id: 'bob', key: '${BOB_KEY}', roles: ['ops'] }], ...(extra.jwt === undefined ? {} : { jwt: extra.jwt }) },
    policies: { default: 'deny', rules: [{ principals: ['role:dev'], tools: ['*'], effect: 'allow' }, { principals: ['role:ops'], tools: ['web__whoami'], effect: 'allow' }] },
    endpoints: [{ name: 'web-only', upstreams: ['web'] }],
    pinning: { mode: 'warn', file: join(dir, 'pins.json') },
    admin: { token: '${ADMIN_TOKEN}', listen: { port: 0 }, ...extra.admin }
  }), ENV)
  await waitReady(gw)
  const app = gw.admin
  assert.ok(app !== undefined)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const admin = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/admin`
  const authorization = `Bearer ${ADMIN_TOKEN}`
  return {
    gw,
    admin,
    async get<T> (path: string) {
      const res = await fetch(`${admin}${path}`, { headers: { authorization } })
      const text = await res.text()
      return { status: res.status, body: (text === '' ? undefined : JSON.parse(text)) as T, text }
    },
    async send<T> (method: string, path: string, body?: unknown) {
      const res = await fetch(`${admin}${path}`, { method, headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      const text = await res.text()
      return { status: res.status, body: (text === '' ? undefined : JSON.parse(text)) as T }
    }
  }
}

async function client (t: TestContext, gw: RunningGateway, who: keyof typeof KEYS, path = '/mcp'): Promise<{ client: Client, transport: StreamableHTTPClientTransport }> {
  const c = new Client({ name: 'console-test', version: '1.2.3' })
  const transport = new StreamableHTTPClientTransport(new URL(path, gw.baseUrl), { requestInit: { headers: { authorization: `Bearer ${KEYS[who]}` } } })
  await c.connect(transport)
  t.after(async () => { await c.close().catch(() => {}) })
  return { client: c, transport }
}

test('GET /admin/upstreams shows each upstream\'s negotiated protocol version, when its state last changed, and its live child pid', async (t) => {
  const { get } = await start(t)
  const { status, body } = await get<{ upstreams: AdminUpstreamView[] }>('/upstreams')
  assert.equal(status, 200)
  assert.deepEqual(body.upstreams.map(u => u.name).sort(), ['fs', 'web'])
  for (const u of body.upstreams) {
    assert.equal(u.state, 'ready')
    assert.equal(u.protocolVersion, '2025-11-25')
    assert.ok(u.stateSince > 0 && u.stateSince <= Date.now(), `stateSince ${u.stateSince}`)
    assert.equal(typeof u.pid, 'number')
    assert.doesNotThrow(() => process.kill(u.pid as number, 0), `pid ${String(u.pid)} is a live process`)
  }
})

test('GET /admin/stats counts the SDK client\'s calls per upstream in the current minute, errors apart', async (t) => {
  const { gw, get } = await start(t)
  const { client: alice } = await client(t, gw, 'alice')
  await alice.callTool({ name: 'fs__echo', arguments: { text: 'one' } })
  await alice.callTool({ name: 'fs__echo', arguments: { text: 'two' } })
  await alice.callTool({ name: 'web__fail', arguments: {} })
  const { status, body } = await get<AdminCallStats>('/stats')
  assert.equal(status, 200)
  assert.equal(body.windowMinutes, 15)
  const byName = new Map(body.upstreams.map(u => [u.upstream, u.minutes]))
  assert.equal(byName.get('fs')?.length, 15)
  const total = (name: string, key: 'calls' | 'errors'): number => (byName.get(name) ?? []).reduce((n, m) => n + m[key], 0)
  assert.equal(total('fs', 'calls'), 2)
  assert.equal(total('fs', 'errors'), 0)
  assert.equal(total('web', 'calls'), 1)
  assert.equal(total('web', 'errors'), 1, 'a tool error counts as an error')
  assert.equal(typeof byName.get('fs')?.at(-1)?.p95Ms, 'number')
})

test('GET /admin/sessions lists the SDK client\'s session by ref (never its id); DELETE by ref ends it like the client\'s own DELETE', async (t) => {
  const { gw, get, send } = await start(t)
  const { client: alice, transport } = await client(t, gw, 'alice')
  await alice.listTools()
  const sessionId = transport.sessionId
  assert.ok(sessionId !== undefined)
  const listed = await get<AdminSessionList>('/sessions?limit=10')
  assert.equal(listed.status, 200)
  assert.ok(!listed.text.includes(sessionId), 'the session id is never shown')
  assert.equal(listed.body.total, 1)
  assert.deepEqual(listed.body.byEndpoint, { '': 1 })
  assert.deepEqual(listed.body.byPrincipal, { alice: 1 })
  assert.equal(listed.body.truncated, false)
  const [item] = listed.body.sessions
  assert.ok(item !== undefined)
  assert.match(item.ref, /^[0-9a-f]{16}$/)
  assert.equal(item.principal, 'alice')
  assert.equal(item.endpoint, null)
  assert.equal(item.transport, 'streamable-http')
  assert.equal(item.protocolVersion, '2025-11-25')
  assert.equal(item.client, 'console-test 1.2.3')
  assert.ok(item.openedAt <= item.lastActivityAt)
  assert.equal((await get<AdminSessionList>('/sessions?limit=0')).body.truncated, true)
  assert.equal((await get<unknown>('/sessions?limit=x')).status, 400)

  assert.equal((await send('DELETE', '/sessions/0123456789abcdef')).status, 404)
  assert.equal((await send('DELETE', `/sessions/${item.ref}`)).status, 204)
  assert.equal((await get<AdminSessionList>('/sessions')).body.total, 0)
  // The client's next request finds no session.
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 9, method: 'tools/list' }, { authorization: `Bearer ${KEYS.alice}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })
  assert.equal(res.status, 404)
  assert.equal((await send('DELETE', `/sessions/${item.ref}`)).status, 404, 'ended once')
})

test('a client name with a U+202E reaches the Sessions page escaped and isolated: the console renders it through the gateway\'s own visibleText module, inside <bdi>', async (t) => {
  const { gw, admin, get } = await start(t)
  const evil = new Client({ name: 'evil\u202Elive', version: '1' })
  await evil.connect(new StreamableHTTPClientTransport(new URL('/mcp', gw.baseUrl), { requestInit: { headers: { authorization: `Bearer ${KEYS.alice}` } } }))
  t.after(async () => { await evil.close().catch(() => {}) })
  const [item] = (await get<AdminSessionList>('/sessions')).body.sessions
  assert.equal(item?.client, 'evil\u202Elive 1', 'the admin API keeps the data as it came')

  // The console's files, as a browser gets them from the admin listener (no sign-in needed for files).
  const origin = new URL(admin).origin
  const res = await fetch(`${origin}/console/visible-text.js`)
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /^text\/javascript/)
  const source = await res.text()
  const served = await import(`data:text/javascript;base64,${Buffer.from(source).toString('base64')}`) as { visibleText: (text: string) => string }
  assert.equal(served.visibleText(item.client ?? ''), 'evil\\u{202E}live 1', 'the browser escapes what the CLI escapes')
  const ui = await (await fetch(`${origin}/console/ui.js`)).text()
  assert.match(ui, /import \{ visibleText \} from '\.\/visible-text\.js'/)
  assert.match(ui, /html`<bdi>\$\{shown\(text, options\)\}<\/bdi>`/)
  const page = await (await fetch(`${origin}/console/page-sessions.js`)).text()
  assert.match(page, /bdi\(s\.client\)/, 'the Sessions page shows the client name through bdi()')
  assert.match(page, /<th scope="row">\$\{bdi\(s\.principal\)\}<\/th>/, 'and the principal')
  assert.match(await (await fetch(`${origin}/console/style.css`)).text(), /bdi, code, option \{ unicode-bidi: isolate; \}/)
})

test('GET /admin/catalog shows an endpoint\'s items with upstream, own name, annotations and pin state; q ranks like search_tools', async (t) => {
  const { get } = await start(t)
  // The pin book records a listing just after the catalog shows it: wait for the pin, not a moment.
  let all = await get<AdminCatalogView>('/catalog')
  await waitFor(async () => {
    all = await get<AdminCatalogView>('/catalog')
    return all.body.tools.find(tool => tool.name === 'fs__echo')?.pin === 'pinned'
  }, 'the echo tool pinned')
  assert.equal(all.status, 200)
  assert.equal(all.body.endpoint, null)
  assert.equal(all.body.principal, null)
  assert.deepEqual(all.body.endpoints, ['web-only'])
  const echo = all.body.tools.find(tool => tool.name === 'fs__echo')
  assert.ok(echo !== undefined)
  assert.equal(echo.upstream, 'fs')
  assert.equal(echo.upstreamName, 'echo')
  assert.equal(echo.title, 'Echo')
  assert.deepEqual(echo.annotations, { readOnlyHint: true })
  assert.equal(echo.pin, 'pinned')
  assert.equal(echo.score, undefined)
  assert.ok(all.body.tools.some(tool => tool.upstream === 'web'))
  assert.ok(all.body.prompts.length > 0 || all.body.resources.length > 0 || all.body.templates.length > 0, 'prompts and resources are listed too')

  const web = await get<AdminCatalogView>('/catalog?endpoint=web-only')
  assert.equal(web.body.endpoint, 'web-only')
  assert.ok(web.body.tools.length > 0 && web.body.tools.every(tool => tool.upstream === 'web'))
  assert.ok([...web.body.prompts, ...web.body.resources, ...web.body.templates].every(item => item.upstream === 'web'))

  const ranked = await get<AdminCatalogView>('/catalog?q=add%20two%20numbers')
  assert.equal(ranked.body.tools[0]?.name, 'fs__add')
  assert.ok(ranked.body.tools.every(tool => typeof tool.score === 'number'))
  assert.ok(ranked.body.tools.every((tool, i, list) => i === 0 || (list[i - 1]?.score ?? 0) >= (tool.score ?? 0)), 'best first')

  const bob = await get<AdminCatalogView>('/catalog?principal=bob')
  assert.equal(bob.body.principal, 'bob')
  assert.deepEqual(bob.body.tools.map(tool => tool.name), ['web__whoami'])

  assert.equal((await get<{ error: string }>('/catalog?endpoint=nope')).status, 404)
  const unknown = await get<{ error: string }>('/catalog?principal=mallory')
  assert.equal(unknown.status, 400)
  assert.equal(unknown.body.error, 'unknown_principal')
})

test('GET /admin/principals lists the API keys\' principals and roles, never a key', async (t) => {
  const { get } = await start(t)
  const { status, body, text } = await get<{ principals: AdminPrincipalView[] }>('/principals')
  assert.equal(status, 200)
  assert.deepEqual(body.principals, [{ id: 'alice', roles: ['dev'], via: 'api-key' }, { id: 'bob', roles: ['ops'], via: 'api-key' }])
  for (const key of Object.values(KEYS)) assert.ok(!text.includes(key))
})

test('POST /admin/tools/call runs as the principal through the call path: the tool\'s exact result, the policy\'s denial, the audit line and the CallFeed event', async (t) => {
  const { gw, send } = await start(t)
  const events: CallEvent[] = []
  t.after(gw.gateway.calls.subscribe((event) => { events.push(event) }))
  const { client: alice } = await client(t, gw, 'alice')
  const direct = await alice.callTool({ name: 'fs__echo', arguments: { text: 'hello' } })

  const called = await send<AdminToolCallResult>('POST', '/tools/call', { principal: 'alice', tool: 'fs__echo', arguments: { text: 'hello' } })
  assert.equal(called.status, 200)
  assert.ok('result' in called.body)
  assert.deepEqual(called.body.result, direct)

  const denied = await send<AdminToolCallResult>('POST', '/tools/call', { principal: 'bob', tool: 'fs__echo', arguments: { text: 'hello' } })
  assert.equal(denied.status, 200)
  assert.ok('error' in denied.body)
  assert.equal(denied.body.error.code, -32602)

  const allowed = await send<AdminToolCallResult>('POST', '/tools/call', { principal: 'bob', endpoint: 'web-only', tool: 'web__whoami' })
  assert.ok('result' in allowed.body && allowed.body.result.isError !== true)

  assert.equal((await send<{ error: string }>('POST', '/tools/call', { principal: 'mallory', tool: 'fs__echo' })).status, 400)
  assert.equal((await send<{ error: string }>('POST', '/tools/call', { principal: 'alice', tool: 'fs__echo', endpoint: 'nope' })).status, 404)
  assert.equal((await send<{ error: string }>('POST', '/tools/call', { principal: 'alice', arguments: [] })).status, 400)
  // Arguments larger than the other admin bodies' 16 KB, within this route's 64 KB.
  const big = await send<AdminToolCallResult>('POST', '/tools/call', { principal: 'alice', tool: 'fs__echo', arguments: { text: 'x'.repeat(40_000) } })
  assert.equal(big.status, 200)
  assert.ok('result' in big.body)
  assert.equal((await send('POST', '/tools/call', { principal: 'alice', tool: 'fs__echo', arguments: { text: 'x'.repeat(70_000) } })).status, 413)

  const audit = await waitFor(() => {
    const lines = gw.logs.filter(l => l.component === 'audit' && l.msg === 'tool call')
    return lines.length >= 5 ? lines : undefined
  }, 'the audit lines')
  assert.deepEqual(audit.map(l => [l.principal, l.tool, l.outcome]), [['alice', 'fs__echo', 'ok'], ['alice', 'fs__echo', 'ok'], ['bob', 'fs__echo', 'denied'], ['bob', 'web__whoami', 'ok'], ['alice', 'fs__echo', 'ok']])
  assert.deepEqual(events.map(e => [e.principal, e.tool, e.upstream, e.outcome, e.endpoint]), [['alice', 'fs__echo', 'fs', 'ok', undefined], ['alice', 'fs__echo', 'fs', 'ok', undefined], ['bob', 'fs__echo', 'fs', 'denied', undefined], ['bob', 'web__whoami', 'web', 'ok', 'web-only'], ['alice', 'fs__echo', 'fs', 'ok', undefined]])
  // The user's own call reads as theirs; every call made from the admin API says so.
  const asAdmin = (as: string): Record<string, string> => ({ via: 'admin', as })
  assert.deepEqual(audit.map(l => l.actor), [undefined, asAdmin('alice'), asAdmin('bob'), asAdmin('bob'), asAdmin('alice')])
  assert.deepEqual(events.map(e => e.actor), [undefined, asAdmin('alice'), asAdmin('bob'), asAdmin('bob'), asAdmin('alice')])
  const session = gw.logs.find(l => l.msg === 'session opened' && l.client === 'switchboard-console')
  assert.equal(session, undefined, 'a console call holds no session')
  assert.equal(gw.gateway.sessions.size, 1, 'only the SDK client\'s session is held')
})

test('POST /admin/tools/call is cancelled upstream when its caller goes away', async (t) => {
  const { gw, admin } = await start(t)
  const events: CallEvent[] = []
  t.after(gw.gateway.calls.subscribe((event) => { events.push(event) }))
  const gone = new AbortController()
  const pending = fetch(`${admin}/tools/call`, { method: 'POST', signal: gone.signal, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ principal: 'alice', tool: 'fs__stall' }) })
  await waitFor(() => gw.gateway.pool.status().find(u => u.name === 'fs')?.inFlight === 1, 'the stalled call in flight')
  gone.abort()
  await assert.rejects(pending)
  const ended = await waitFor(() => events.find(e => e.tool === 'fs__stall'), 'the call\'s end')
  assert.equal(ended.outcome, 'cancelled')
  assert.equal(ended.principal, 'alice')
  await waitFor(() => gw.gateway.pool.status().find(u => u.name === 'fs')?.inFlight === 0, 'nothing in flight')
})

test('POST /admin/tools/call refuses a JWT subject the gateway does not know; one with an open session is known, and the live feed says the admin acted', async (t) => {
  const jwks = await startJwksServer(t)
  const { gw, admin, send } = await start(t, { jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, jwksTimeoutMs: 1000 } })
  const invented = await send<{ error: string, message: string }>('POST', '/tools/call', { principal: 'carol', roles: ['dev'], tool: 'fs__echo', arguments: { text: 'hi' } })
  assert.equal(invented.status, 403)
  assert.equal(invented.body.error, 'unknown_principal')
  assert.match(invented.body.message, /admin\.console\.actAsUnknown/)

  const carol = new Client({ name: 'carol-client', version: '1.0.0' })
  await carol.connect(new StreamableHTTPClientTransport(new URL('/mcp', gw.baseUrl), { requestInit: { headers: { authorization: `Bearer ${await jwks.sign({ sub: 'carol', aud: AUDIENCE })}` } } }))
  t.after(async () => { await carol.close().catch(() => {}) })

  const live = await fetch(`${admin}/events`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  assert.equal(live.status, 200)
  const calls = readNamedEvents(live, events => events.some(e => e.event === 'call'))
  const known = await send<AdminToolCallResult>('POST', '/tools/call', { principal: 'carol', roles: ['dev'], tool: 'fs__echo', arguments: { text: 'hi' } })
  assert.equal(known.status, 200)
  assert.ok('result' in known.body && known.body.result.isError !== true)
  const event = (await calls).find(e => e.event === 'call')
  assert.ok(event !== undefined)
  assert.deepEqual((JSON.parse(event.data) as CallEvent).actor, { via: 'admin', as: 'carol' })
  const audit = await waitFor(() => gw.logs.find(l => l.component === 'audit' && l.principal === 'carol'), 'the audit line')
  assert.deepEqual([audit.via, audit.actor], ['jwt', { via: 'admin', as: 'carol' }])
  const lines = gw.logs.filter(l => l.component === 'audit' && l.principal === 'carol')
  assert.equal(lines.length, 1, 'the refused call reached no call path')
})

test('admin.console.actAsUnknown: true lets POST /admin/tools/call act as a JWT subject nobody has seen, still marked as the admin\'s', async (t) => {
  const jwks = await startJwksServer(t)
  const { gw, send } = await start(t, { jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, jwksTimeoutMs: 1000 }, admin: { console: { actAsUnknown: true } } })
  const called = await send<AdminToolCallResult>('POST', '/tools/call', { principal: 'dave', roles: ['dev'], tool: 'fs__echo', arguments: { text: 'hi' } })
  assert.equal(called.status, 200)
  assert.ok('result' in called.body && called.body.result.isError !== true)
  const audit = await waitFor(() => gw.logs.find(l => l.component === 'audit' && l.principal === 'dave'), 'the audit line')
  assert.deepEqual(audit.actor, { via: 'admin', as: 'dave' })
  assert.equal((await send<{ error: string }>('POST', '/tools/call', { principal: 'mallory', tool: 'fs__echo' })).status, 200, 'any subject, with JWT configured')
})
