import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import Fastify, { type FastifyInstance, type InjectOptions } from 'fastify'
import { parseConfig } from '../../../src/config/load-config.ts'
import type { ConfigDiff } from '../../../src/config/config-diff.ts'
import { adminAuthOk, adminRoutes, type AdminRoutesOptions, type AdminSessionsView, type AdminUpstreamView } from '../../../src/http/admin-routes.ts'
import type { ReloadResult } from '../../../src/ops/reload-result.ts'

const TOKEN = 'admin-token-for-the-unit-tests'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const API_KEY = 'api-key-that-must-not-leak'

const CONFIG = parseConfig([
  'admin: { token: "$' + '{ADMIN}" }',
  'auth: { apiKeys: [{ id: alice, key: "$' + '{KEY}" }] }',
  'upstreams: [{ name: fs, transport: stdio, command: node, env: { SECRET: "$' + '{KEY}" } }]'
].join('\n'), { ADMIN: TOKEN, KEY: API_KEY })

const UPSTREAMS: AdminUpstreamView[] = [
  { name: 'fs', state: 'ready', transport: 'stdio', isolation: 'shared', tools: 3, inFlight: 1, reconnects: 0, circuit: 'closed', sessionConnections: 0, principalConnections: 0, protocolVersion: '2025-11-25', stateSince: 1, pid: 4242 },
  { name: 'web', state: 'reconnecting', transport: 'streamable-http', isolation: 'session', tools: 0, inFlight: 0, reconnects: 2, lastError: 'ECONNREFUSED', circuit: 'open', sessionConnections: 4, principalConnections: 0, protocolVersion: null, stateSince: 2, pid: null }
]
const SESSIONS: AdminSessionsView = { total: 3, byTransport: { 'streamable-http': 2, websocket: 1 }, byPrincipal: { alice: 3 } }

function diff (restartRequired: string[] = []): ConfigDiff {
  return { upstreams: { added: ['new'], removed: ['old'], changed: ['web'], unchanged: ['fs'] }, applied: ['policies'], restartRequired }
}

async function build (t: TestContext, overrides: Partial<AdminRoutesOptions> = {}): Promise<{ app: FastifyInstance, reconnects: string[] }> {
  const reconnects: string[] = []
  const app = Fastify()
  await app.register(adminRoutes, {
    token: () => TOKEN,
    reload: async () => ({ outcome: 'ok', diff: diff() }),
    config: () => CONFIG,
    upstreams: () => UPSTREAMS,
    sessions: () => SESSIONS,
    reconnect: (name) => { reconnects.push(name); return name === 'fs' },
    connections: async () => ({ upstreams: [] }),
    revokeConnection: async () => false,
    ...overrides
  })
  t.after(() => app.close())
  return { app, reconnects }
}

async function call (app: FastifyInstance, options: InjectOptions): Promise<{ status: number, body: unknown, headers: Record<string, unknown> }> {
  const res = await app.inject(options)
  return { status: res.statusCode, body: res.json(), headers: res.headers }
}

describe('admin API authentication', () => {
  it('answers 401 with a Bearer challenge without a token, with a wrong one, and on unknown paths', async (t) => {
    const { app, reconnects } = await build(t)
    const cases: InjectOptions[] = [
      { method: 'GET', url: '/admin/config' },
      { method: 'GET', url: '/admin/config', headers: { authorization: 'Bearer not-the-admin-token-at-all' } },
      { method: 'GET', url: '/admin/config', headers: { authorization: `Basic ${TOKEN}` } },
      { method: 'GET', url: '/admin/config', headers: { authorization: 'Bearer ' } },
      { method: 'POST', url: '/admin/upstreams/fs/reconnect' },
      { method: 'GET', url: '/admin/nothing-here' },
      { method: 'GET', url: '/' }
    ]
    for (const options of cases) {
      const res = await call(app, options)
      assert.equal(res.status, 401, `${options.method ?? ''} ${options.url ?? ''}`)
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="switchboard-admin"')
      assert.equal((res.body as { error: string }).error, 'unauthorized')
      assert.equal(typeof (res.body as { message: unknown }).message, 'string')
    }
    assert.deepEqual(reconnects, [], 'nothing ran behind a refused request')
  })

  it('reads the token on every request, so a reload that changes it takes effect at once', async (t) => {
    let token = TOKEN
    const { app } = await build(t, { token: () => token })
    assert.equal((await call(app, { method: 'GET', url: '/admin/sessions', headers: AUTH })).status, 200)
    token = 'a-new-admin-token-after-reload'
    assert.equal((await call(app, { method: 'GET', url: '/admin/sessions', headers: AUTH })).status, 401)
    assert.equal((await call(app, { method: 'GET', url: '/admin/sessions', headers: { authorization: `bearer ${token}` } })).status, 200)
  })

  it('adminAuthOk accepts only the exact token after a Bearer scheme', () => {
    assert.equal(adminAuthOk(`Bearer ${TOKEN}`, TOKEN), true)
    assert.equal(adminAuthOk(`Bearer  ${TOKEN} `, TOKEN), true)
    assert.equal(adminAuthOk(`Bearer ${TOKEN}x`, TOKEN), false)
    assert.equal(adminAuthOk(`Bearer ${TOKEN.slice(0, -1)}`, TOKEN), false)
    assert.equal(adminAuthOk(TOKEN, TOKEN), false)
    assert.equal(adminAuthOk(undefined, TOKEN), false)
    assert.equal(adminAuthOk('Bearer ', ''), false)
  })
})

describe('admin API routes', () => {
  it('POST /admin/reload: 200 with the flattened diff, with or without a body or content-type', async (t) => {
    const { app } = await build(t)
    const expected = { outcome: 'ok', added: ['new'], removed: ['old'], changed: ['web'], unchanged: ['fs'], applied: ['policies'], restartRequired: [] }
    for (const extra of [{}, { headers: { ...AUTH, 'content-type': 'application/json' } }, { payload: '{}', headers: { ...AUTH, 'content-type': 'application/json' } }]) {
      const res = await call(app, { method: 'POST', url: '/admin/reload', headers: AUTH, ...extra })
      assert.equal(res.status, 200)
      assert.deepEqual(res.body, expected)
    }
  })

  it('GET /admin/reload/preview: what a reload would change, marked as a preview; 400 when a reload would be refused; 404 without one', async (t) => {
    const { app } = await build(t, { previewReload: async () => ({ outcome: 'ok', diff: diff() }) })
    const res = await call(app, { method: 'GET', url: '/admin/reload/preview', headers: AUTH })
    assert.equal(res.status, 200)
    assert.deepEqual(res.body, { outcome: 'preview', added: ['new'], removed: ['old'], changed: ['web'], unchanged: ['fs'], applied: ['policies'], restartRequired: [], preview: 'nothing was applied: POST /admin/reload applies this' })
    const refused = await build(t, { previewReload: async () => ({ outcome: 'invalid', errors: [{ path: 'logLevel', message: 'bad' }] }) })
    const bad = await call(refused.app, { method: 'GET', url: '/admin/reload/preview', headers: AUTH })
    assert.equal(bad.status, 400)
    assert.deepEqual(bad.body, { outcome: 'invalid', errors: [{ path: 'logLevel', message: 'bad' }], message: 'a reload would be refused; nothing would be applied' })
    const none = await build(t)
    assert.equal((await call(none.app, { method: 'GET', url: '/admin/reload/preview', headers: AUTH })).status, 404)
  })

  it('POST /admin/reload: names what needs a restart', async (t) => {
    const { app } = await build(t, { reload: async () => ({ outcome: 'ok', diff: diff(['listen', 'admin.listen']) }) })
    const res = await call(app, { method: 'POST', url: '/admin/reload', headers: AUTH })
    const body = res.body as { restartRequired: string[], message: string }
    assert.equal(res.status, 200)
    assert.deepEqual(body.restartRequired, ['listen', 'admin.listen'])
    assert.match(body.message, /listen, admin\.listen .*restart/)
  })

  it('POST /admin/reload: 400 with every error when invalid, 500 when applying failed', async (t) => {
    const errors = [{ path: 'upstreams[0].url', message: 'required for transport sse' }, { path: 'logLevel', message: 'Invalid option' }]
    let result: ReloadResult = { outcome: 'invalid', errors }
    const { app } = await build(t, { reload: async () => result })
    const invalid = await call(app, { method: 'POST', url: '/admin/reload', headers: AUTH })
    assert.equal(invalid.status, 400)
    assert.deepEqual(invalid.body, { outcome: 'invalid', errors, message: 'nothing was applied' })
    result = { outcome: 'error', errors: [{ path: 'upstreams', message: 'spawn ENOENT' }] }
    const failed = await call(app, { method: 'POST', url: '/admin/reload', headers: AUTH })
    assert.equal(failed.status, 500)
    assert.equal((failed.body as { outcome: string }).outcome, 'error')
    assert.deepEqual((failed.body as { errors: unknown }).errors, result.errors)
  })

  it('POST /admin/reload: a reload that throws is a 500 JSON error', async (t) => {
    const { app } = await build(t, { reload: async () => { throw new Error('boom') } })
    const res = await call(app, { method: 'POST', url: '/admin/reload', headers: AUTH })
    assert.equal(res.status, 500)
    assert.equal((res.body as { error: string }).error, 'internal_error')
  })

  it('GET /admin/config: the effective config with every secret redacted', async (t) => {
    const { app } = await build(t)
    const res = await call(app, { method: 'GET', url: '/admin/config', headers: AUTH })
    assert.equal(res.status, 200)
    assert.equal(res.headers['cache-control'], 'no-store')
    const body = res.body as { admin: { token: string }, auth: { apiKeys: Array<{ id: string, key: string }> }, catalog: unknown }
    assert.equal(body.admin.token, '[redacted]')
    assert.deepEqual(body.auth.apiKeys.map(k => [k.id, k.key]), [['alice', '[redacted]']])
    assert.deepEqual(body.catalog, CONFIG.catalog)
    const text = JSON.stringify(body)
    assert.ok(!text.includes(TOKEN) && !text.includes(API_KEY))
  })

  it('GET /admin/upstreams and /admin/sessions: the views as given', async (t) => {
    const { app } = await build(t)
    const upstreams = await call(app, { method: 'GET', url: '/admin/upstreams', headers: AUTH })
    assert.equal(upstreams.status, 200)
    assert.deepEqual(upstreams.body, { upstreams: UPSTREAMS })
    const sessions = await call(app, { method: 'GET', url: '/admin/sessions', headers: AUTH })
    assert.equal(sessions.status, 200)
    assert.deepEqual(sessions.body, SESSIONS)
  })

  it('POST /admin/upstreams/:name/reconnect: 202 for a known upstream, 404 for an unknown one', async (t) => {
    const { app, reconnects } = await build(t)
    const ok = await call(app, { method: 'POST', url: '/admin/upstreams/fs/reconnect', headers: AUTH })
    assert.equal(ok.status, 202)
    assert.deepEqual(ok.body, { upstream: 'fs', reconnecting: true })
    const missing = await call(app, { method: 'POST', url: '/admin/upstreams/nope/reconnect', headers: AUTH })
    assert.equal(missing.status, 404)
    assert.equal((missing.body as { error: string }).error, 'not_found')
    assert.match((missing.body as { message: string }).message, /"nope"/)
    assert.deepEqual(reconnects, ['fs', 'nope'])
  })

  it('GET /metrics: the exposition behind the token when a registry is given, a 404 without one', async (t) => {
    const registry = { contentType: 'text/plain; version=0.0.4; charset=utf-8', metrics: async () => 'switchboard_up 1\n' }
    const { app } = await build(t, { metrics: registry })
    assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401)
    const res = await app.inject({ method: 'GET', url: '/metrics', headers: AUTH })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-type'], registry.contentType)
    assert.equal(res.body, 'switchboard_up 1\n')
    const { app: without } = await build(t)
    assert.equal((await without.inject({ method: 'GET', url: '/metrics', headers: AUTH })).statusCode, 404)
  })

  it('answers unknown paths and methods with a JSON 404 once authenticated', async (t) => {
    const { app } = await build(t)
    for (const [method, url] of [['GET', '/admin/nothing-here?x=1'], ['GET', '/admin/reload'], ['DELETE', '/admin/sessions']] as const) {
      const res = await call(app, { method, url, headers: AUTH })
      assert.equal(res.status, 404)
      assert.equal((res.body as { error: string }).error, 'not_found')
    }
  })

  it('refuses an oversized body with a JSON 413', async (t) => {
    const { app } = await build(t)
    const res = await call(app, { method: 'POST', url: '/admin/reload', headers: { ...AUTH, 'content-type': 'application/json' }, payload: 'x'.repeat(64 * 1024) })
    assert.equal(res.status, 413)
    assert.equal((res.body as { error: string }).error, 'bad_request')
  })
})
