import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { revealInto } from '../../../src/auth/secret.ts'
import type { CredentialRequest } from '../../../src/credentials/credential-provider.ts'
import { renewAt } from '../../../src/credentials/grant-freshness.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { CODE_CLIENT, startAuthorizationServer, type AuthorizationServer, type AuthorizationServerOptions } from '../../fixtures/authorization-server.ts'
import { revoke } from '../../helpers/oauth-flows.ts'
import { redisOrSkip, startRedisServer } from '../../helpers/redis-server.ts'
import { waitFor } from '../../helpers/start-gateway.ts'
import {
  ALICE, REDIRECT_URI, connect, memoryStore, newKey, redisStore, replica, upstreamsOf, type Replica, type Store
} from './oauth/oauth-harness.ts'

const UPSTREAM_URL = 'http://127.0.0.1:9/mcp'
const GRANT = { upstream: 'github', principal: 'jwt:alice' }
const asAlice: CredentialRequest = { principal: ALICE }

async function authorizationServer (t: TestContext, options: AuthorizationServerOptions = {}): Promise<AuthorizationServer> {
  const server = await startAuthorizationServer(t, { redirectUris: [REDIRECT_URI], ...options })
  t.after(() => { assert.deepEqual(server.serverErrors, []) })
  return server
}

function github (server: AuthorizationServer, extra: Record<string, unknown> = {}): ReturnType<typeof upstreamsOf> {
  return upstreamsOf([{
    name: 'github',
    transport: 'streamable-http',
    url: UPSTREAM_URL,
    isolation: 'principal',
    auth: { type: 'oauth', issuer: server.issuer, clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret, scopes: ['mcp:tools'], ...extra }
  }])
}

/** The Authorization header sent for `who` ('gateway': the gateway's own listing connection). */
async function bearer (gateway: Replica, who: CredentialRequest | 'gateway' = asAlice): Promise<string> {
  const upstream = gateway.upstream('github')
  return revealInto({}, await gateway.services.providers.for(upstream).headersFor(upstream, who === 'gateway' ? undefined : who)).authorization ?? ''
}

/** Waits until the stored grant is due for renewal (the access token lives 2 s here). */
async function dueForRenewal (store: Store): Promise<void> {
  const grant = await store.vault.get(GRANT)
  assert.ok(grant !== undefined)
  await waitFor(() => Date.now() >= renewAt(grant), 'the grant to be due for renewal')
}

describe('OAuth credential provider', () => {
  it('sends the stored grant as a bearer token and counts ok', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const gateway = replica(memoryStore(t, key), github(server), key)
    await connect(gateway.services, 'github', ALICE, 'alice')
    assert.match(await bearer(gateway), /^Bearer ey/)
    assert.deepEqual(gateway.outcomes.at(-1), ['github', 'oauth', 'ok'])
  })

  it('three replicas due to refresh at once spend the refresh token exactly once and share the new token', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const server = await authorizationServer(t, { accessTokenTtlS: 2 })
    const key = newKey()
    const stores = await Promise.all([0, 1, 2].map(() => redisStore(t, redis.url, key)))
    const replicas = stores.map(store => replica(store, github(server), key))
    const [first] = replicas as [Replica]
    await connect(first.services, 'github', ALICE, 'alice')
    const before = await bearer(first)
    await dueForRenewal(stores[0] as Store)
    const tokens = await Promise.all(replicas.map(r => bearer(r)))
    assert.equal(server.counts.grants.refresh_token, 1, 'one refresh_token grant for three replicas')
    assert.equal(server.counts.refreshFailures, 0)
    assert.equal(new Set(tokens).size, 1, 'every replica sends the one refreshed token')
    assert.notEqual(tokens[0], before)
    assert.equal(replicas.flatMap(r => r.outcomes).filter(([, , o]) => o === 'refreshed').length, 1)
    assert.equal((await stores[1]?.vault.get(GRANT))?.accessToken.reveal(), tokens[0]?.slice('Bearer '.length), 'the rotated grant is stored')
  })

  it('after a refresh the rotated refresh token is the one stored and spent next', async (t) => {
    const server = await authorizationServer(t, { accessTokenTtlS: 2 })
    const key = newKey()
    const store = memoryStore(t, key)
    const gateway = replica(store, github(server), key)
    await connect(gateway.services, 'github', ALICE, 'alice')
    const original = (await store.vault.get(GRANT))?.refreshToken?.reveal()
    for (let round = 1; round <= 2; round++) {
      await dueForRenewal(store)
      await bearer(gateway)
      assert.equal(server.counts.grants.refresh_token, round)
    }
    assert.notEqual((await store.vault.get(GRANT))?.refreshToken?.reveal(), original)
    assert.equal(server.counts.refreshFailures, 0, 'a spent refresh token was never sent again')
  })

  it('a revoked refresh token forgets the grant and asks the user to connect again', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const store = memoryStore(t, key)
    const gateway = replica(store, github(server), key)
    await connect(gateway.services, 'github', ALICE, 'alice')
    await bearer(gateway)
    const grant = await store.vault.get(GRANT)
    await revoke(server, grant?.refreshToken?.reveal() ?? '')
    const provider = gateway.services.providers.for(gateway.upstream('github'))
    // The upstream refuses the token (401): one forced refresh, refused with invalid_grant.
    assert.equal(await provider.refused?.(gateway.upstream('github'), asAlice), false)
    assert.equal(await store.vault.get(GRANT), undefined)
    assert.equal(await provider.needsConnect?.(gateway.upstream('github'), asAlice), true)
    await assert.rejects(bearer(gateway), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED'))
    assert.ok(gateway.outcomes.some(([, , o]) => o === 'connect_required'))
  })

  it('a 401 with a live token refreshes once and reports a new token', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const gateway = replica(memoryStore(t, key), github(server), key)
    await connect(gateway.services, 'github', ALICE, 'alice')
    const before = await bearer(gateway)
    const provider = gateway.services.providers.for(gateway.upstream('github'))
    assert.equal(await provider.refused?.(gateway.upstream('github'), asAlice), true)
    assert.equal(server.counts.grants.refresh_token, 1)
    assert.notEqual(await bearer(gateway), before)
  })

  it('keeps sending a cached live token while the vault\'s Redis is down; an uncached caller gets the store\'s error', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const server = await authorizationServer(t)
    const key = newKey()
    const gateway = replica(await redisStore(t, redis.url, key), github(server), key)
    await connect(gateway.services, 'github', ALICE, 'alice')
    const before = await bearer(gateway)
    await redis.stop()
    assert.equal(await bearer(gateway), before)
    assert.equal(await gateway.services.providers.for(gateway.upstream('github')).needsConnect?.(gateway.upstream('github'), asAlice), false)
    // Someone this replica holds nothing for gets the store's error, not a connect request.
    await assert.rejects(bearer(gateway, { principal: { ...ALICE, id: 'carol' } }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_TOKEN_STORE_UNAVAILABLE'))
  })

  it('the gateway\'s own listing connection uses auth.listing.headers, and fails without them', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const listed = replica(memoryStore(t, key), github(server, { listing: { headers: { authorization: 'Bearer service-listing' } } }), key)
    assert.equal(await bearer(listed, 'gateway'), 'Bearer service-listing')
    const unlisted = replica(memoryStore(t, key), github(server), key)
    await assert.rejects(bearer(unlisted, 'gateway'), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_AUTH'))
  })
})
