import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startGateway } from '../helpers/start-gateway.ts'

const METRICS_TOKEN = 'metrics-token-0123456789abcdef'
const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const KEY = 'alice-key-0123456789abcdef'
const env = { ...process.env, SWITCHBOARD_METRICS_TOKEN: METRICS_TOKEN, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN, ALICE_KEY: KEY }

/* eslint-disable no-template-curly-in-string -- the config's own ${VAR} syntax */
const WITH_TOKEN = JSON.stringify({ upstreams: [], metrics: { token: '${SWITCHBOARD_METRICS_TOKEN}' } })
const WITH_ADMIN = JSON.stringify({ upstreams: [], admin: { listen: { port: 0 }, token: '${SWITCHBOARD_ADMIN_TOKEN}' } })
const PUBLIC_HOST = { listen: { host: '0.0.0.0' }, auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }] } }
/* eslint-enable no-template-curly-in-string */

async function scrape (url: string, token?: string): Promise<Response> {
  return await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })
}

test('with metrics.token, /metrics on the MCP listener answers 401 without the bearer token and the exposition with it', async (t) => {
  const gw = await startGateway(t, WITH_TOKEN, env)
  const url = `${gw.baseUrl}/metrics`
  const missing = await scrape(url)
  assert.equal(missing.status, 401)
  assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="switchboard-metrics"')
  assert.deepEqual(await missing.json(), { error: 'unauthorized', message: '/metrics needs Authorization: Bearer <metrics token>' })
  assert.equal((await scrape(url, 'not-the-metrics-token-at-all')).status, 401)
  assert.equal((await scrape(url, ADMIN_TOKEN)).status, 401, 'the admin token is not the metrics token')
  const ok = await scrape(url, METRICS_TOKEN)
  assert.equal(ok.status, 200)
  assert.match(ok.headers.get('content-type') ?? '', /^text\/plain/)
  assert.match(await ok.text(), /^switchboard_config_last_reload_successful 1$/m)
  assert.equal((await fetch(`${gw.baseUrl}/healthz`)).status, 200, 'health and readiness stay open')
  assert.ok(!JSON.stringify(gw.logs).includes(METRICS_TOKEN), 'the token is never logged')
})

test('the admin listener serves /metrics behind the admin token; without metrics.token the MCP listener\'s stays public', async (t) => {
  const gw = await startGateway(t, WITH_ADMIN, env)
  const admin = gw.admin
  assert.ok(admin !== undefined)
  await admin.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(admin.server.address() as { port: number }).port}/metrics`
  const missing = await scrape(url)
  assert.equal(missing.status, 401)
  assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="switchboard-admin"')
  assert.equal((await scrape(url, METRICS_TOKEN)).status, 401)
  const ok = await scrape(url, ADMIN_TOKEN)
  assert.equal(ok.status, 200)
  assert.match(ok.headers.get('content-type') ?? '', /^text\/plain/)
  const body = await ok.text()
  assert.match(body, /^switchboard_config_last_reload_successful 1$/m)
  assert.match(body, /^process_cpu_user_seconds_total/m, 'the same registry as the MCP listener\'s')
  assert.equal((await scrape(`${gw.baseUrl}/metrics`)).status, 200)
})

test('a gateway beyond loopback warns at start that /metrics is public, unless metrics.token is set', async (t) => {
  const open = await startGateway(t, JSON.stringify({ upstreams: [], ...PUBLIC_HOST }), env)
  const warning = open.logs.find(l => l.level === 40 && /\/metrics is served without authentication/.test(l.msg))
  assert.ok(warning !== undefined, 'warned')
  assert.equal(warning.host, '0.0.0.0')
  // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
  const closed = await startGateway(t, JSON.stringify({ upstreams: [], ...PUBLIC_HOST, metrics: { token: '${SWITCHBOARD_METRICS_TOKEN}' } }), env)
  assert.equal(closed.logs.filter(l => /\/metrics is served/.test(l.msg)).length, 0)
  const local = await startGateway(t, 'upstreams: []\n', env)
  assert.equal(local.logs.filter(l => /\/metrics is served/.test(l.msg)).length, 0, 'loopback: nothing to warn about')
})
