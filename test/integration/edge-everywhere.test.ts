import { test } from 'node:test'
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { createConnection } from 'node:net'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { startGateway, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

const METRICS_TOKEN = 'metrics-token-0123456789abcdef'
const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const env = { ...process.env, SWITCHBOARD_METRICS_TOKEN: METRICS_TOKEN, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN }
// A name the page of a DNS-rebinding attack must never learn.
const UPSTREAM = 'internal-billing'

/* eslint-disable no-template-curly-in-string -- the config's own ${VAR} syntax */
const CONFIG = JSON.stringify({
  upstreams: [{ name: UPSTREAM, transport: 'stdio', ...fixtureCommand(['--name', UPSTREAM]) }],
  metrics: { token: '${SWITCHBOARD_METRICS_TOKEN}' },
  admin: { listen: { port: 0 }, token: '${SWITCHBOARD_ADMIN_TOKEN}' },
  auth: { jwt: { issuer: 'https://idp.example', audience: 'https://gw.example/mcp', jwksUri: 'http://127.0.0.1:9/jwks' } }
})
/* eslint-enable no-template-curly-in-string */

interface Answer { status: number, body: string }

/** A raw HTTP/1.1 GET with exactly these headers (fetch would not let a test choose Host). */
async function get (gw: RunningGateway, path: string, headers: Record<string, string>): Promise<Answer> {
  const { port } = new URL(gw.baseUrl)
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, setHost: false }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { body += chunk })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body }) })
    })
    req.on('error', reject)
    req.end()
  })
}

test('a DNS-rebinding request (foreign Host) to /readyz, /healthz, /metrics, the metadata or an unknown path gets 403 and no upstream name', async (t) => {
  const gw = await startGateway(t, CONFIG, env)
  await waitReady(gw)
  for (const path of ['/readyz', '/healthz', '/metrics', '/.well-known/oauth-protected-resource', '/nothing-here', '/mcp']) {
    for (const host of ['evil.example', `evil.example:${new URL(gw.baseUrl).port}`, `127.0.0.1:${new URL(gw.baseUrl).port}@evil.example`]) {
      const answer = await get(gw, path, { host, authorization: `Bearer ${METRICS_TOKEN}` })
      assert.equal(answer.status, 403, `${path} with Host ${host}`)
      assert.ok(!answer.body.includes(UPSTREAM), `${path} with Host ${host} names the upstream`)
      assert.match(answer.body, /Forbidden: Host/)
    }
  }
})

test('a foreign Origin is refused on the probes and /metrics; the RFC 9728 metadata stays readable by any origin', async (t) => {
  const gw = await startGateway(t, CONFIG, env)
  const origin = 'https://evil.example'
  for (const path of ['/readyz', '/healthz', '/metrics']) {
    assert.equal((await get(gw, path, { host: 'localhost', origin })).status, 403, path)
  }
  const metadata = await get(gw, '/.well-known/oauth-protected-resource', { host: 'localhost', origin })
  assert.equal(metadata.status, 200)
})

test('anonymous /readyz and /healthz give the status only; the metrics or admin token also sees each upstream', async (t) => {
  const gw = await startGateway(t, CONFIG, env)
  await waitReady(gw)
  const host = `127.0.0.1:${new URL(gw.baseUrl).port}`
  assert.deepEqual(JSON.parse((await get(gw, '/readyz', { host })).body), { status: 'ready' })
  assert.deepEqual(JSON.parse((await get(gw, '/healthz', { host })).body), { status: 'ok' })
  assert.deepEqual(JSON.parse((await get(gw, '/readyz', { host, authorization: 'Bearer not-a-token-of-ours-at-all' })).body), { status: 'ready' })
  for (const token of [METRICS_TOKEN, ADMIN_TOKEN]) {
    for (const path of ['/readyz', '/healthz']) {
      const body = JSON.parse((await get(gw, path, { host, authorization: `Bearer ${token}` })).body) as { upstreams?: Array<{ name: string, state: string }> }
      assert.deepEqual(body.upstreams?.map(u => u.name), [UPSTREAM], `${path} with the ${token === ADMIN_TOKEN ? 'admin' : 'metrics'} token`)
    }
  }
})

test('an HTTP/1.0 health check without Host (HAProxy option httpchk) is answered', async (t) => {
  const gw = await startGateway(t, CONFIG, env)
  await waitReady(gw)
  const { port } = new URL(gw.baseUrl)
  const text = await new Promise<string>((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port: Number(port) }, () => { socket.write('GET /readyz HTTP/1.0\r\n\r\n') })
    let data = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { data += chunk })
    socket.on('end', () => { resolve(data) })
    socket.on('error', reject)
  })
  assert.match(text, /^HTTP\/1\.[01] 200/)
})
