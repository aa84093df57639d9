import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { CODE_CLIENT, startAuthorizationServer } from '../fixtures/authorization-server.ts'
import { startProtectedUpstream } from '../fixtures/protected-upstream.ts'
import { connectAsBrowser } from '../helpers/gateway-browser.ts'
import { freePort } from '../helpers/free-port.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { startReplicaAt, type Replica } from '../helpers/replicas.ts'
import { metricValue, scrapeMetrics, waitFor } from '../helpers/start-gateway.ts'

// Issue 37 across replicas: alice disconnects on one of two gateways sharing one Redis; each
// replica's idle connection of hers then finds her grant gone at its next health check (the other
// replica once its cached grant is older than the vault recheck, 5 s). Before the fix, that
// looped on reconnects on every replica and opened the circuit everywhere, refusing bob, whose
// token is fine, for as long as it lasted; the issue watched it for 60 s. The test proves the same
// in a fraction of that: health checks every 300 ms instead of 30 s, and a breaker that two
// failures open for a minute, so that one failure counted for the upstream on either replica
// shows at once; the window of bob's calls then spans many health checks on both replicas.

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh' }
type User = keyof typeof KEYS
const TOOL = 'gh__whoami'
const ROUNDS = 6
const PAUSE_MS = 500
/** The other replica notices a disconnect within the vault recheck (5 s) plus a health check. */
const NOTICED_WITHIN_MS = 20_000

const subOf = (result: unknown): unknown => (result as { structuredContent?: { sub?: unknown } }).structuredContent?.sub

async function clientAt (t: TestContext, replica: Replica, user: User): Promise<Client> {
  const c = new Client({ name: `${user}-agent`, version: '1.0.0' })
  await c.connect(new StreamableHTTPClientTransport(new URL('/mcp', replica.baseUrl), { requestInit: { headers: { authorization: `Bearer ${KEYS[user]}` } } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

/**
 * Connects `user`'s account at the upstream: the call's -32042 link, the user's API key on the
 * gateway's page (the proof of who is at the browser), then the consent.
 */
async function connectUser (c: Client, user: User): Promise<void> {
  const err = await c.callTool({ name: TOOL, arguments: {} }).then(() => undefined, (e: unknown) => e as { code?: number, data?: { elicitations?: Array<{ url: string }> } })
  assert.equal(err?.code, -32042, 'a call before connecting asks to connect')
  const page = await connectAsBrowser(String(err?.data?.elicitations?.[0]?.url), { login: user, proof: { apiKey: KEYS[user] } })
  assert.equal(page.status, 200, page.body)
}

const closedForCredential = (r: Replica, user: User): boolean =>
  r.logs.some(l => l.principal === user && l.msg.startsWith('upstream connection closed: its caller has no usable credential'))

test('two replicas on one Redis: alice disconnects on one, each replica closes her idle connection quietly at its health check, and the circuit stays closed on both while bob is served', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const as = await startAuthorizationServer(t)
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  const redis = await startRedisServer(t)
  const [port0, port1] = [await freePort(), await freePort()]
  // Connect links and the OAuth callback go to r0; the grant lands in Redis, where r1 reads it.
  const publicUrl = `http://127.0.0.1:${port0}`
  as.registerClient({ client_id: CODE_CLIENT.clientId, client_secret: CODE_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/oauth/callback`], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })
  const config = {
    http: { publicUrl },
    auth: { apiKeys: Object.entries(KEYS).map(([id, key]) => ({ id, key })) },
    redis: { url: redis.url },
    tokens: { store: 'redis', encryptionKey: randomBytes(32).toString('base64') },
    upstreams: [{
      name: 'gh',
      transport: 'streamable-http',
      url: upstream.mcpUrl,
      healthCheckMs: 300,
      circuitBreaker: { failureThreshold: 2, windowMs: 60_000, cooldownMs: 60_000 },
      auth: { type: 'oauth', clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret }
    }],
    logLevel: 'info'
  }
  const replicas = await Promise.all([startReplicaAt(t, 'r0', port0, config), startReplicaAt(t, 'r1', port1, config)])
  const [r0, r1] = replicas
  assert.ok(r0 !== undefined && r1 !== undefined)

  const clients: Record<User, Client[]> = { alice: [], bob: [] }
  for (const user of ['alice', 'bob'] as const) {
    clients[user] = await Promise.all(replicas.map(async r => await clientAt(t, r, user)))
    const [viaR0] = clients[user]
    assert.ok(viaR0 !== undefined)
    await connectUser(viaR0, user)
    for (const c of clients[user]) assert.equal(subOf(await c.callTool({ name: TOOL, arguments: {} })), user)
  }

  const disconnected = await fetch(`${r0.baseUrl}/connections/gh`, { method: 'DELETE', headers: { authorization: `Bearer ${KEYS.alice}` } })
  assert.equal(disconnected.status, 204)
  await waitFor(() => replicas.every(r => closedForCredential(r, 'alice')), 'alice\'s connection closed on both replicas', NOTICED_WITHIN_MS)

  for (let round = 0; round < ROUNDS; round++) {
    await sleep(PAUSE_MS)
    const answers = await Promise.all(clients.bob.map(async c => subOf(await c.callTool({ name: TOOL, arguments: {} }))))
    assert.deepEqual(answers, ['bob', 'bob'], `round ${round}: bob is served on both replicas`)
  }

  for (const r of replicas) {
    const metrics = await scrapeMetrics(r.baseUrl)
    assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_state', { upstream: 'gh', state: 'closed' }), 1, `${r.name}: circuit closed`)
    assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_transitions_total', { upstream: 'gh', to: 'open' }) ?? 0, 0, `${r.name}: never opened`)
    assert.equal(metricValue(metrics, 'switchboard_principal_connections', { upstream: 'gh' }), 1, `${r.name}: only bob's connection is open`)
    assert.deepEqual(r.logs.filter(l => l.principal === 'alice' && (l.msg === 'upstream reconnect scheduled' || l.msg.startsWith('circuit'))), [], `${r.name}: no reconnect of hers`)
  }
  // Her next call, on either replica, asks her to connect again.
  for (const c of clients.alice) {
    const err = await c.callTool({ name: TOOL, arguments: {} }).then(() => undefined, (e: unknown) => e as { code?: number })
    assert.equal(err?.code, -32042)
  }
})
