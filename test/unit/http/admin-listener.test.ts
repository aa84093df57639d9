import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import Fastify, { type FastifyInstance } from 'fastify'
import pino from 'pino'
import { buildApp } from '../../../src/app.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import { adminRoutes } from '../../../src/http/admin-routes.ts'
import type { AdminService } from '../../../src/ops/admin-service.ts'

const TOKEN = 'admin-token-for-the-listener-tests'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const CONSOLE_COOKIE = 'console=signed-in'

const SERVICE: AdminService = {
  reload: async () => ({ outcome: 'ok', diff: { upstreams: { added: [], removed: [], changed: [], unchanged: [] }, applied: [], restartRequired: [] } }),
  config: () => parseConfig('upstreams: []', {}),
  upstreams: () => [],
  sessions: () => ({ total: 0, byTransport: {}, byPrincipal: {} }),
  reconnect: () => false,
  connections: async () => ({ upstreams: [] }),
  revokeConnection: async () => false
}

/**
 * A stand-in for the operator console: its own authentication (a cookie), its own Host check and
 * its own form parsing, registered beside the admin API on the same listener.
 */
async function consoleStandIn (app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.host !== 'admin.local') return await reply.code(421).send({ console: 'wrong host' })
    if (request.headers.cookie !== CONSOLE_COOKIE) return await reply.code(403).send({ console: 'sign in first' })
  })
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body.toString())))
  })
  app.get('/', async () => ({ console: 'home' }))
  app.post('/console/approve', async (request) => ({ console: 'approved', form: request.body }))
}

async function build (t: TestContext): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(adminRoutes, { ...SERVICE, token: () => TOKEN, metrics: { contentType: 'text/plain', metrics: async () => 'switchboard_up 1\n' } })
  await app.register(consoleStandIn)
  t.after(() => app.close())
  return app
}

describe('the admin listener as encapsulated plugins', () => {
  it('a sibling plugin answers with its own hooks: the admin bearer hook does not apply to it', async (t) => {
    const app = await build(t)
    const home = await app.inject({ method: 'GET', url: '/', headers: { host: 'admin.local', cookie: CONSOLE_COOKIE } })
    assert.equal(home.statusCode, 200)
    assert.deepEqual(home.json(), { console: 'home' })
    assert.equal(home.headers['www-authenticate'], undefined)
    assert.equal(home.headers['cache-control'], undefined, 'the admin hook\'s no-store is not set on the sibling either')
    const form = await app.inject({ method: 'POST', url: '/console/approve', headers: { host: 'admin.local', cookie: CONSOLE_COOKIE, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'call=42&decision=allow' })
    assert.equal(form.statusCode, 200)
    assert.deepEqual(form.json(), { console: 'approved', form: { call: '42', decision: 'allow' } })
  })

  it('the sibling\'s own checks apply to it, and the admin token does not get past them', async (t) => {
    const app = await build(t)
    assert.equal((await app.inject({ method: 'GET', url: '/', headers: { host: 'admin.local' } })).statusCode, 403)
    assert.equal((await app.inject({ method: 'GET', url: '/', headers: { host: 'admin.local', ...AUTH } })).statusCode, 403)
    assert.equal((await app.inject({ method: 'GET', url: '/', headers: { host: 'evil.example', cookie: CONSOLE_COOKIE } })).statusCode, 421)
  })

  it('/admin/* and /metrics still need the admin token, and the sibling\'s hooks do not apply to them', async (t) => {
    const app = await build(t)
    for (const url of ['/admin/sessions', '/admin/upstreams', '/metrics']) {
      const refused = await app.inject({ method: 'GET', url, headers: { host: 'admin.local', cookie: CONSOLE_COOKIE } })
      assert.equal(refused.statusCode, 401, `${url} without the admin token`)
      assert.equal(refused.headers['www-authenticate'], 'Bearer realm="switchboard-admin"')
      const served = await app.inject({ method: 'GET', url, headers: { host: 'elsewhere.example', ...AUTH } })
      assert.equal(served.statusCode, 200, `${url} with the admin token, from a host the console would refuse`)
      assert.equal(served.headers['cache-control'], 'no-store')
    }
  })

  it('paths nobody answers stay behind the admin token: 401 without it, a JSON 404 with it', async (t) => {
    const app = await build(t)
    assert.equal((await app.inject({ method: 'GET', url: '/console/nothing-here' })).statusCode, 401)
    const missing = await app.inject({ method: 'GET', url: '/console/nothing-here', headers: AUTH })
    assert.equal(missing.statusCode, 404)
    assert.equal(missing.json().error, 'not_found')
  })
})

describe('the gateway\'s own admin app', () => {
  it('takes a sibling plugin beside the admin API: the sibling keeps its own hooks, /admin/* and /metrics keep the token', async (t) => {
    // admin.local passes the listener's own Host check; the stand-in checks it again. (The console itself is at /.)
    // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
    const config = parseConfig('admin: { token: "${ADMIN}", allowedHosts: [admin.local] }\nupstreams: []', { ADMIN: TOKEN })
    const { app, admin } = await buildApp(config, pino({ level: 'silent' }), {})
    t.after(() => app.close())
    assert.ok(admin !== undefined)
    await admin.register(consoleStandIn, { prefix: '/sibling' })
    assert.equal((await admin.inject({ method: 'GET', url: '/sibling', headers: { host: 'admin.local', cookie: CONSOLE_COOKIE } })).statusCode, 200)
    assert.equal((await admin.inject({ method: 'GET', url: '/sibling', headers: { host: 'admin.local', ...AUTH } })).statusCode, 403)
    assert.equal((await admin.inject({ method: 'GET', url: '/admin/sessions', headers: { host: 'admin.local', cookie: CONSOLE_COOKIE } })).statusCode, 401)
    assert.deepEqual((await admin.inject({ method: 'GET', url: '/admin/sessions', headers: AUTH })).json(), { total: 0, byTransport: {}, byPrincipal: {}, byEndpoint: {}, sessions: [], truncated: false })
    assert.equal((await admin.inject({ method: 'GET', url: '/metrics' })).statusCode, 401)
    assert.match((await admin.inject({ method: 'GET', url: '/metrics', headers: AUTH })).body, /^switchboard_config_last_reload_successful 1$/m)
  })
})

describe('the admin API\'s body parsing', () => {
  it('parses JSON bodies: a malformed one is a JSON 400 and nothing runs', async (t) => {
    let reloads = 0
    const app = Fastify()
    await app.register(adminRoutes, { ...SERVICE, reload: async () => { reloads++; return await SERVICE.reload() }, token: () => TOKEN })
    t.after(() => app.close())
    const bad = await app.inject({ method: 'POST', url: '/admin/reload', headers: { ...AUTH, 'content-type': 'application/json' }, payload: '{"trigger":' })
    assert.equal(bad.statusCode, 400)
    assert.equal(bad.json().error, 'bad_request')
    assert.equal(reloads, 0)
    for (const [type, payload] of [['application/json', '{"dryRun":false}'], ['application/json; charset=utf-8', ''], ['text/plain', 'anything']]) {
      const ok = await app.inject({ method: 'POST', url: '/admin/reload', headers: { ...AUTH, 'content-type': type }, payload })
      assert.equal(ok.statusCode, 200, `${type} ${payload}`)
    }
    assert.equal(reloads, 3)
  })
})
