import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { createRedisClient, closeRedisClient } from '../../src/net/redis-client.ts'
import { sessionKeys } from '../../src/session/redis-session-store.ts'
import { EXCHANGE_CLIENT, startAuthorizationServer } from '../fixtures/authorization-server.ts'
import { startProtectedUpstream } from '../fixtures/protected-upstream.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// A per-user upstream (token exchange, no listing credential) in front of two real gateways on one
// real Redis: the catalog a user's connection teaches replica A is served by replica B within the
// issue's bound of 2 s, to users who never connected and to the one who did, and B's open sessions
// hear tools/list_changed. Token exchange needs no browser: a company JWT is the whole connect.

/** The issue's bound: what one replica learns, every replica knows within it. */
const PROPAGATION_BOUND_MS = 2000
const ENCRYPTION_KEY = randomBytes(32).toString('base64')

interface Listed { name: string, description?: string | undefined }

async function toolsOf (c: Client): Promise<Listed[]> {
  const { tools } = await c.listTools()
  return tools.map(({ name, description }) => ({ name, description })).sort((a, b) => a.name.localeCompare(b.name))
}

const names = (tools: readonly Listed[]): string[] => tools.map(t => t.name)

async function clientAt (t: TestContext, gw: RunningGateway, jwt: string): Promise<Client> {
  const c = new Client({ name: 'agent', version: '1.0.0' })
  await c.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

async function counted (gw: RunningGateway, outcome: string): Promise<number> {
  return metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_cross_replica_messages_total', { kind: 'listing', outcome }) ?? 0
}

/** How long `check` took to hold, polled every 20 ms and never longer than the issue's bound. */
async function within (check: () => Promise<boolean>, what: string): Promise<number> {
  const started = Date.now()
  await waitFor(check, `${what} within ${PROPAGATION_BOUND_MS} ms`, PROPAGATION_BOUND_MS)
  return Date.now() - started
}

test('a per-user upstream learned through a user on one replica is listed on the other within 2 s, with list_changed to its open sessions; a later change too; bad and foreign announcements are dropped', { timeout: 60_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const as = await startAuthorizationServer(t)
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  const redis = await startRedisServer(t)
  const keyPrefix = `t${Date.now()}`
  const config = JSON.stringify({
    auth: { jwt: as.companyJwtConfig() },
    redis: { url: redis.url, keyPrefix },
    sessions: { store: 'redis' },
    tokens: { encryptionKey: ENCRYPTION_KEY },
    catalog: { listChangedDebounceMs: 20 },
    upstreams: [{ name: 'obo', transport: 'streamable-http', url: upstream.mcpUrl, auth: { type: 'token_exchange', issuer: as.issuer, clientId: EXCHANGE_CLIENT.clientId, clientSecret: EXCHANGE_CLIENT.clientSecret, resource: upstream.mcpUrl, scope: 'mcp:tools' } }]
  })
  const a = await startGateway(t, config)
  const b = await startGateway(t, config)
  await Promise.all([waitReady(a), waitReady(b)])
  const [carol, dave, erin] = await Promise.all(['carol', 'dave', 'erin'].map(async sub => await as.issueCompanyJwt(sub)))
  assert.ok(carol !== undefined && dave !== undefined && erin !== undefined)

  // Open on B before anything is learned: nobody has connected, so B lists none of obo's tools.
  const early = await clientAt(t, b, erin)
  let changes = 0
  early.setNotificationHandler('notifications/tools/list_changed', () => { changes++ })
  assert.deepEqual(names(await toolsOf(early)).filter(n => n.startsWith('obo__')), [])

  await t.test('carol\'s first call on A teaches A; within 2 s dave (never connected) and carol list the same tools on B, and B\'s open session hears list_changed', async () => {
    const carolOnA = await clientAt(t, a, carol)
    const answer = await carolOnA.callTool({ name: 'obo__whoami', arguments: {} })
    assert.equal((answer.structuredContent as { sub?: unknown } | undefined)?.sub, 'carol', JSON.stringify(answer))
    const onA = await toolsOf(carolOnA)
    assert.deepEqual(names(onA), ['obo__echo', 'obo__whoami'])
    const daveOnB = await clientAt(t, b, dave)
    const tookMs = await within(async () => names(await toolsOf(daveOnB)).length === onA.length, 'dave\'s list on B')
    t.diagnostic(`B listed what A learned ${tookMs} ms after carol's call returned`)
    assert.deepEqual(await toolsOf(daveOnB), onA)
    assert.deepEqual(await toolsOf(await clientAt(t, b, carol)), onA, 'the connected user\'s list is the same on B')
    await within(async () => changes >= 1, 'tools/list_changed on B\'s early session')
    assert.deepEqual(await toolsOf(early), onA)
    assert.ok(await counted(a, 'published') >= 1)
    assert.ok(await counted(b, 'delivered') >= 1)
    assert.ok(b.logs.some(l => l.msg === 'listing of a per-user upstream taken from another replica' && l.upstream === 'obo'), 'B logs each message it applies at debug')
  })

  await t.test('a tool the upstream adds, heard through carol\'s connection on A, is listed on B within 2 s and B\'s open session hears list_changed again', async () => {
    // B has no connection of its own to obo: what it lists next can only come from A.
    assert.equal(metricValue(await scrapeMetrics(b.baseUrl), 'switchboard_principal_connections', { upstream: 'obo' }), 0)
    const before = changes
    const started = Date.now()
    upstream.addTool('shout')
    const daveOnB = await clientAt(t, b, dave)
    await within(async () => names(await toolsOf(daveOnB)).includes('obo__shout'), 'the added tool on B')
    t.diagnostic(`B listed the added tool ${Date.now() - started} ms after the upstream added it (A relists first)`)
    assert.deepEqual(await toolsOf(daveOnB), await toolsOf(await clientAt(t, a, dave)))
    await within(async () => changes > before, 'a second tools/list_changed on B\'s early session')
    // The added tool is served on B, through dave's own (exchanged) connection.
    const shout = await daveOnB.callTool({ name: 'obo__shout', arguments: { text: 'hi' } })
    assert.deepEqual(shout.content, [{ type: 'text', text: 'hi' }])
  })

  await t.test('a malformed announcement is logged once and dropped, one for an upstream B does not have is ignored, and B keeps serving', async () => {
    const bus = createRedisClient({ url: redis.url, commandTimeoutMs: 2000, connectionName: 'test-bus' })
    t.after(async () => { await closeRedisClient(bus) })
    await waitFor(() => bus.status === 'ready', 'the test\'s Redis connection')
    const channel = sessionKeys(keyPrefix).bus
    const ignored = await counted(b, 'ignored')
    const send = async (message: unknown): Promise<void> => { await bus.publish(channel, JSON.stringify({ from: 'elsewhere', message })) }
    await send({ kind: 'listing', upstream: 42, version: 'v1' })
    await send({ kind: 'listing', upstream: 'obo', version: 'not a version!' })
    await send({ kind: 'listing', upstream: 'drifted', version: 'v1' })
    await waitFor(async () => await counted(b, 'ignored') - ignored >= 3, 'three announcements ignored on B')
    assert.equal(b.logs.filter(l => l.msg.startsWith('malformed listing announcement')).length, 1, 'logged once')
    assert.deepEqual(names(await toolsOf(early)), ['obo__echo', 'obo__shout', 'obo__whoami'])
  })
})
