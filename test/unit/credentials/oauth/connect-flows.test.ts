import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { decodeJwt } from 'jose'
import { revealInto } from '../../../../src/auth/secret.ts'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { CODE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../../../fixtures/authorization-server.ts'
import { consent } from '../../../helpers/consent.ts'
import {
  ALICE, BOB, REDIRECT_URI, connect, consentedCallback, memoryStore, newKey, replica, upstreamsOf, type Replica
} from './oauth-harness.ts'

const UPSTREAM_URL = 'http://127.0.0.1:9/mcp'

async function setup (t: TestContext): Promise<{ server: AuthorizationServer, gateway: Replica }> {
  const server = await startAuthorizationServer(t, { redirectUris: [REDIRECT_URI] })
  t.after(() => { assert.deepEqual(server.serverErrors, []) })
  const key = newKey()
  const upstreams = upstreamsOf([{
    name: 'github',
    transport: 'streamable-http',
    url: UPSTREAM_URL,
    isolation: 'principal',
    auth: { type: 'oauth', issuer: server.issuer, clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret, scopes: ['mcp:tools'] }
  }])
  return { server, gateway: replica(memoryStore(t, key), upstreams, key) }
}

async function bearerOf (gateway: Replica, who: typeof ALICE): Promise<string> {
  const headers = revealInto({}, await gateway.services.providers.for(gateway.upstream('github')).headersFor(gateway.upstream('github'), { principal: who }))
  return (headers.authorization ?? '').replace(/^Bearer /, '')
}

describe('connect flows (auth oauth)', () => {
  it('a completed connect stores the grant for the principal who started it, meant for the upstream and whose sub is the login', async (t) => {
    const { gateway } = await setup(t)
    const done = await connect(gateway.services, 'github', ALICE, 'alice-at-github')
    assert.equal(done.upstream, 'github')
    assert.deepEqual(done.principal, ALICE)
    assert.equal(typeof done.elicitationId, 'string')
    const token = await bearerOf(gateway, ALICE)
    const claims = decodeJwt(token)
    assert.equal(claims.sub, 'alice-at-github')
    assert.equal(claims.aud, UPSTREAM_URL)
    const [summary] = await gateway.services.connectFlows.list('jwt:alice')
    assert.equal(summary?.key.upstream, 'github')
    assert.equal(summary?.refreshable, true)
    assert.ok(!JSON.stringify(summary).includes(token), 'a listing names no token')
  })

  it('the authorization URL carries PKCE S256, the upstream as resource, the scopes and a signed state', async (t) => {
    const { gateway } = await setup(t)
    const url = await gateway.services.connectFlows.authorizationUrl('github', ALICE)
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256')
    assert.equal(url.searchParams.get('resource'), UPSTREAM_URL)
    assert.equal(url.searchParams.get('scope'), 'mcp:tools')
    assert.equal(url.searchParams.get('redirect_uri'), REDIRECT_URI)
    assert.match(url.searchParams.get('state') ?? '', /^[\w-]+\.[\w-]+$/)
  })

  it('a callback replayed with the same query is refused: a state is taken once', async (t) => {
    const { gateway } = await setup(t)
    const query = await consentedCallback(gateway.services, 'github', ALICE, 'alice')
    await gateway.services.connectFlows.complete(query)
    await assert.rejects(gateway.services.connectFlows.complete(query), (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'))
  })

  it('a forged or altered state is refused without spending the genuine state\'s record', async (t) => {
    const { gateway } = await setup(t)
    const query = await consentedCallback(gateway.services, 'github', ALICE, 'alice')
    const state = query.get('state') ?? ''
    for (const forged of ['x', `${state.split('.')[0] ?? ''}.AAAA`, `other.${state.split('.')[1] ?? ''}`]) {
      const bad = new URLSearchParams(query)
      bad.set('state', forged)
      await assert.rejects(gateway.services.connectFlows.complete(bad), (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'))
    }
    const none = new URLSearchParams(query)
    none.delete('state')
    await assert.rejects(gateway.services.connectFlows.complete(none), (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'))
    assert.equal((await gateway.services.connectFlows.complete(query)).principal.id, 'alice', 'the genuine state still completes')
  })

  it('a state started by alice lands in alice\'s vault whoever brings the callback; bob stays unconnected', async (t) => {
    const { gateway } = await setup(t)
    // Bob's browser completes the consent alice's link started (login CSRF): the record decides the principal.
    const query = await consentedCallback(gateway.services, 'github', ALICE, 'bob-at-github')
    const done = await gateway.services.connectFlows.complete(query)
    assert.deepEqual(done.principal, ALICE)
    const provider = gateway.services.providers.for(gateway.upstream('github'))
    assert.equal(await provider.needsConnect?.(gateway.upstream('github'), { principal: BOB }), true)
    assert.equal(await provider.needsConnect?.(gateway.upstream('github'), { principal: ALICE }), false)
    await assert.rejects(provider.headersFor(gateway.upstream('github'), { principal: BOB }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED'))
  })

  it('a connect link is valid only for its upstream and only as issued', async (t) => {
    const { gateway } = await setup(t)
    const link = await gateway.services.connectFlows.linkFor('github', ALICE)
    const url = new URL(link.url)
    assert.equal(url.pathname, '/connect/github')
    const token = url.searchParams.get('link') ?? ''
    assert.deepEqual((await gateway.services.connectFlows.principalOfLink('github', token))?.principal, ALICE)
    assert.equal((await gateway.services.connectFlows.principalOfLink('github', token))?.elicitationId, link.elicitationId)
    assert.equal(await gateway.services.connectFlows.principalOfLink('linear', token), undefined)
    assert.equal(await gateway.services.connectFlows.principalOfLink('github', `${token.slice(0, -2)}xx`), undefined)
  })

  it('denied consent completes with SB_ERR_UPSTREAM_TOKEN and stores nothing', async (t) => {
    const { gateway } = await setup(t)
    const authorize = await gateway.services.connectFlows.authorizationUrl('github', ALICE)
    const callback = await consent(authorize, { login: 'alice', decision: 'deny' })
    await assert.rejects(gateway.services.connectFlows.complete(callback.searchParams), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
    assert.deepEqual(await gateway.services.connectFlows.list(), [])
  })

  it('connected() resolves once the grant is stored, and rejects when its signal aborts', async (t) => {
    const { gateway } = await setup(t)
    const waiting = gateway.services.connectFlows.connected('github', ALICE, AbortSignal.timeout(10_000))
    await connect(gateway.services, 'github', ALICE, 'alice')
    await waiting
    const aborted = new AbortController()
    const never = gateway.services.connectFlows.connected('github', BOB, aborted.signal)
    aborted.abort()
    await assert.rejects(never)
  })

  it('disconnect revokes the refresh token at the authorization server and forgets the grant', async (t) => {
    const { server, gateway } = await setup(t)
    await connect(gateway.services, 'github', ALICE, 'alice')
    assert.equal(await gateway.services.connectFlows.disconnect('github', 'jwt:alice'), true)
    assert.equal(server.counts.revocations, 1)
    assert.deepEqual(gateway.outcomes.filter(([, , o]) => o === 'revoked'), [['github', 'oauth', 'revoked']])
    assert.deepEqual(await gateway.services.connectFlows.list('jwt:alice'), [])
    assert.equal(await gateway.services.connectFlows.disconnect('github', 'jwt:alice'), false)
  })
})
