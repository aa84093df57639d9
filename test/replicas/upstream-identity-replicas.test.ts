import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { RENEW_AHEAD_MS } from '../../src/credentials/grant-freshness.ts'
import { RedisVault } from '../../src/credentials/vault/redis-vault.ts'
import { Keyring } from '../../src/credentials/vault/sealed-record.ts'
import type { GrantKey } from '../../src/credentials/vault/token-vault.ts'
import { CODE_CLIENT, startAuthorizationServer } from '../fixtures/authorization-server.ts'
import { startProtectedUpstream } from '../fixtures/protected-upstream.ts'
import { connectAsBrowser, GatewayBrowser } from '../helpers/gateway-browser.ts'
import { holdPort } from '../helpers/free-port.ts'
import { haproxyOrSkip, SERVED_BY_HEADER, startHaproxy } from '../helpers/haproxy.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { startReplicaAt, startReplicas, type Replica } from '../helpers/replicas.ts'
import { metricValue, scrapeMetrics, waitFor } from '../helpers/start-gateway.ts'

// Per-user upstream OAuth across three real gateway processes sharing one Redis behind HAProxy: the
// connect (its link and its callback) lands on any replica, every replica then acts upstream as the
// caller, a due token is refreshed once for all of them, a revoked grant asks to connect again
// everywhere, a rotated key still opens old grants, and a Redis outage spares tokens already held.

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh', carol: 'carol-key-0123456789abcdef' }
type User = keyof typeof KEYS
const USERS: readonly User[] = ['alice', 'bob']
const OLD_KEY = randomBytes(32).toString('base64')
const NEW_KEY = randomBytes(32).toString('base64')
/** Short enough that a token falls due within the test, long enough for a round of calls on three replicas. */
const TOKEN_TTL_S = 5
const TOOL = 'gh__whoami'

const grantOf = (user: User): GrantKey => ({ upstream: 'gh', principal: `api-key:${user}` })

/** When the gateway renews a grant (src/credentials/grant-freshness.ts renewAt), from what a listing shows. */
function dueAt (grant: { expiresAt?: number | undefined, obtainedAt: number }): number {
  assert.ok(grant.expiresAt !== undefined, 'the authorization server gave the token a lifetime')
  return grant.expiresAt - Math.min(RENEW_AHEAD_MS, (grant.expiresAt - grant.obtainedAt) / 10)
}

/** Waits for time itself (a token falling due), never for a result: bounded by the token lifetime. */
async function sleepUntil (epochMs: number): Promise<void> {
  const wait = epochMs - Date.now()
  assert.ok(wait <= TOKEN_TTL_S * 1000 + 1000, `a wait of ${wait} ms is longer than a token lives`)
  if (wait > 0) await sleep(wait)
}

const subOf = (result: unknown): unknown => (result as { structuredContent?: { sub?: unknown } }).structuredContent?.sub

/** The subject the upstream saw; a call without one shows what it got instead (a failed assertion then says why). */
async function whoami (c: Client): Promise<unknown> {
  const result = await c.callTool({ name: TOOL, arguments: {} }).catch((err: unknown) => ({ thrown: String(err) }))
  return subOf(result) ?? JSON.stringify(result).slice(0, 600)
}

interface CallFailure { code?: number, message?: string, data?: { elicitations?: Array<{ url: string, mode: string }> } }

/** How a call that must fail failed: its JSON-RPC error, or (no code) the text of its isError result. */
async function failure (c: Client): Promise<CallFailure> {
  const outcome = await c.callTool({ name: TOOL, arguments: {} }).then(result => ({ result }), (err: unknown) => ({ err: err as CallFailure }))
  if ('err' in outcome) return outcome.err
  assert.equal(outcome.result.isError, true, `expected a failure, got ${JSON.stringify(outcome.result)}`)
  return { message: JSON.stringify(outcome.result.content) }
}

async function clientAt (t: TestContext, baseUrl: string, user: User): Promise<Client> {
  const c = new Client({ name: `${user}-agent`, version: '1.0.0' })
  await c.connect(new StreamableHTTPClientTransport(new URL('/mcp', baseUrl), { requestInit: { headers: { authorization: `Bearer ${KEYS[user]}` } } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

/** A metric summed over every label set (e.g. every `op` of the token store's errors). */
function metricSum (text: string, name: string): number {
  return text.split('\n').filter(line => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0)
}

async function refreshedOn (replicas: readonly Replica[]): Promise<number> {
  let sum = 0
  for (const r of replicas) sum += metricValue(await scrapeMetrics(r.baseUrl), 'switchboard_upstream_auth_total', { upstream: 'gh', type: 'oauth', outcome: 'refreshed' }) ?? 0
  return sum
}

/** The test's own view of the vault (it holds the key): due times, and a refresh token to revoke. */
async function vaultReader (t: TestContext, redisUrl: string, encryptionKey: string): Promise<RedisVault> {
  const vault = new RedisVault({ keyring: new Keyring({ encryptionKey }), url: redisUrl, keyPrefix: 'switchboard', commandTimeoutMs: 2000 })
  t.after(async () => { await vault.close() })
  await vault.connected()
  return vault
}

test('three replicas behind HAProxy on one Redis: each user connects once through any replica and acts as themselves on every one; a due token is refreshed once for all; a revoked grant asks to connect again; a rotated key still opens old grants; a Redis outage spares cached tokens and is counted', { timeout: 180_000 }, async (t) => {
  if (!redisOrSkip(t) || !haproxyOrSkip(t)) return
  const as = await startAuthorizationServer(t, { accessTokenTtlS: TOKEN_TTL_S, refreshTokenRotation: true })
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  const redis = await startRedisServer(t)
  // The balancer's address is the public URL (connect links, the OAuth callback): known before the replicas start.
  // Its Host (127.0.0.1:<port>) is a loopback name, which every replica accepts without http.allowedHosts.
  const held = await holdPort()
  let released: Promise<void> | undefined
  const release = async (): Promise<void> => { await (released ??= held.release()) }
  t.after(release)
  const publicUrl = `http://127.0.0.1:${held.port}`
  as.registerClient({ client_id: CODE_CLIENT.clientId, client_secret: CODE_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/oauth/callback`], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })
  const configWith = (tokens: Record<string, unknown>): Record<string, unknown> => ({
    http: { publicUrl },
    auth: { apiKeys: Object.entries(KEYS).map(([id, key]) => ({ id, key })) },
    redis: { url: redis.url },
    sessions: { store: 'redis' },
    tokens: { store: 'auto', ...tokens },
    upstreams: [{ name: 'gh', transport: 'streamable-http', url: upstream.mcpUrl, auth: { type: 'oauth', clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret } }],
    logLevel: 'info'
  })
  let replicas = await startReplicas(t, 3, configWith({ encryptionKey: OLD_KEY }))
  await release()
  const balancer = await startHaproxy(t, replicas.map(r => ({ name: r.name, port: r.port })), { port: held.port })
  const allUp = async (): Promise<boolean> => Object.values(await balancer.serverStates()).filter(s => s === 'UP').length === 3
  await waitFor(allUp, 'all three replicas UP in HAProxy', 15_000)
  const reader = await vaultReader(t, redis.url, OLD_KEY)
  let fresh = reader
  const noGatewayKeyUpstream = (): void => {
    assert.ok(upstream.seen.authorizations.length > 0)
    for (const value of upstream.seen.authorizations) {
      assert.ok(Object.values(KEYS).every(key => !value.includes(key)), 'a gateway API key reached the upstream')
    }
    assert.equal(upstream.counts.sessionMismatches, 0, 'no upstream session carried two users')
  }
  // One client per (user, replica), straight to that replica's own /mcp.
  let direct: Record<User, Client[]> = { alice: [], bob: [], carol: [] }
  const connectDirect = async (users: readonly User[]): Promise<void> => {
    direct = { alice: [], bob: [], carol: [] }
    for (const user of users) direct[user] = await Promise.all(replicas.map(async r => await clientAt(t, r.baseUrl, user)))
  }

  await t.test('each user connects once through the balancer (the callback lands on any replica) and whoami answers their own subject on every replica', async () => {
    for (const user of USERS) {
      const viaBalancer = await clientAt(t, balancer.url, user)
      const err = await failure(viaBalancer)
      assert.equal(err.code, -32042, JSON.stringify(err))
      const url = String(err.data?.elicitations?.[0]?.url)
      assert.ok(url.startsWith(`${publicUrl}/connect/gh?link=`), url)
      const page = await connectAsBrowser(url, { login: user, proof: { apiKey: KEYS[user] } })
      assert.equal(page.status, 200, page.body)
      assert.ok(replicas.some(r => r.name === page.headers.get(SERVED_BY_HEADER)), 'the callback went through HAProxy')
      // That link was spent through the balancer: opened at each replica directly, by its own user, it is spent there too.
      // (Here, before the tokens' lifetimes matter: the next test waits until they are due.)
      const spent = new URL(url)
      for (const r of replicas) {
        const again = await new GatewayBrowser().proveAndOpen(`${r.baseUrl}${spent.pathname}${spent.search}`, { apiKey: KEYS[user] })
        assert.equal(again.status, 400, `${r.name}: ${again.body}`)
        assert.match(again.body, /already been used/)
      }
    }
    await connectDirect(USERS)
    for (const user of USERS) {
      assert.deepEqual(await Promise.all(direct[user].map(whoami)), replicas.map(() => user))
    }
    noGatewayKeyUpstream()
  })

  await t.test('a due token is refreshed exactly once for three replicas calling at the same moment, and every call answers', async () => {
    const grants = await reader.list({ upstream: 'gh' })
    assert.equal(grants.length, 2)
    const refreshes = as.counts.grants.refresh_token ?? 0
    const refreshed = await refreshedOn(replicas)
    await sleepUntil(Math.max(...grants.map(dueAt)) + 100)
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(USERS.flatMap(user => direct[user].map(whoami)))
      assert.deepEqual(answers, USERS.flatMap(user => replicas.map(() => user)), `round ${round}`)
    }
    assert.equal((as.counts.grants.refresh_token ?? 0) - refreshes, 2, 'one refresh_token grant per due token')
    assert.equal(as.counts.refreshFailures, 0)
    assert.equal(as.counts.grantsRevoked, 0, 'no refresh token was spent twice')
    assert.equal(await refreshedOn(replicas) - refreshed, 2)
  })

  await t.test('a refresh token revoked at the authorization server: the next call after expiry asks to connect again on every replica, after one refused refresh', async () => {
    const grant = await reader.get(grantOf('bob'))
    assert.ok(grant?.refreshToken !== undefined)
    const revoked = await fetch(as.revocationEndpoint, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${CODE_CLIENT.clientId}:${CODE_CLIENT.clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: grant.refreshToken.reveal(), token_type_hint: 'refresh_token' })
    })
    assert.equal(revoked.status, 200)
    const refused = as.counts.refreshFailures
    await sleepUntil(dueAt(grant) + 100)
    const errors = await Promise.all(direct.bob.map(failure))
    assert.deepEqual(errors.map(e => e.code), replicas.map(() => -32042), JSON.stringify(errors))
    // Even the call whose refresh was refused names the link to connect again (its grant was gone only on the way).
    for (const e of errors) assert.ok(String(e.data?.elicitations?.[0]?.url).startsWith(`${publicUrl}/connect/gh?link=`), JSON.stringify(e))
    assert.equal(as.counts.refreshFailures - refused, 1, 'one replica tried the revoked refresh token, the others learnt from the vault')
    assert.equal(await reader.get(grantOf('bob')), undefined, 'the refused grant is forgotten')
    assert.deepEqual(await Promise.all(direct.alice.map(whoami)), replicas.map(() => 'alice'))
    // Connecting again through the link of any of those errors restores bob on every replica.
    const page = await connectAsBrowser(String(errors[1]?.data?.elicitations?.[0]?.url), { login: 'bob', proof: { apiKey: KEYS.bob } })
    assert.equal(page.status, 200, page.body)
    assert.deepEqual(await Promise.all(direct.bob.map(whoami)), replicas.map(() => 'bob'))
  })

  await t.test('replicas restarted with a new encryption key and the old one in previousKeys read the grants sealed before, without reconnecting', async () => {
    const config = configWith({ encryptionKey: NEW_KEY, previousKeys: [OLD_KEY] })
    await Promise.all(replicas.map(async (r) => { r.kill('SIGTERM'); await r.exited }))
    replicas = await Promise.all(replicas.map(async r => await startReplicaAt(t, r.name, r.port, config)))
    await connectDirect(USERS)
    for (const user of USERS) assert.deepEqual(await Promise.all(direct[user].map(whoami)), replicas.map(() => user))
    // Read once, sealed again with the new key: a reader holding only the new key opens it now.
    fresh = await vaultReader(t, redis.url, NEW_KEY)
    await waitFor(async () => await fresh.get(grantOf('alice')), 'alice\'s grant sealed with the new key')
    await waitFor(allUp, 'the restarted replicas UP in HAProxy', 15_000)
  })

  await t.test('Redis down: a token cached on a replica keeps working there; an uncached read fails for that caller alone and is counted', async () => {
    const [r0] = replicas
    const [alice] = direct.alice
    assert.ok(r0 !== undefined && alice !== undefined)
    const carol = await clientAt(t, r0.baseUrl, 'carol')
    // Alice's token must outlive every call below: the outage starts just after its renewal.
    const grant = await fresh.get(grantOf('alice'))
    assert.ok(grant !== undefined)
    await sleepUntil(dueAt(grant) + 100)
    assert.equal(await whoami(alice), 'alice')
    await redis.stop()
    assert.equal(await whoami(alice), 'alice')
    const err = await failure(carol)
    assert.notEqual(err.code, -32042, 'an unreadable store is not a missing connect')
    assert.match(err.message ?? '', /cannot reach its token store/)
    assert.ok(metricSum(await scrapeMetrics(r0.baseUrl), 'switchboard_token_store_errors_total') > 0)
    assert.equal(await whoami(alice), 'alice')
  })

  noGatewayKeyUpstream()
})
