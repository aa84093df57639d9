import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { decodeJwt } from 'jose'
import { revealInto } from '../../../../src/auth/secret.ts'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { CODE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../../../fixtures/authorization-server.ts'
import { consent } from '../../../helpers/consent.ts'
import {
  BROWSER, ALICE, BOB, REDIRECT_URI, connect, consentedCallback, memoryStore, newKey, replica, upstreamsOf, type Replica
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
    const url = await gateway.services.connectFlows.authorizationUrl('github', ALICE, BROWSER)
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256')
    assert.equal(url.searchParams.get('resource'), UPSTREAM_URL)
    assert.equal(url.searchParams.get('scope'), 'mcp:tools')
    assert.equal(url.searchParams.get('redirect_uri'), REDIRECT_URI)
    assert.match(url.searchParams.get('state') ?? '', /^[\w-]+\.[\w-]+$/)
  })

  it('a callback replayed with the same query is refused: a state is taken once', async (t) => {
    const { gateway } = await setup(t)
    const query = await consentedCallback(gateway.services, 'github', ALICE, 'alice')
    await gateway.services.connectFlows.complete(query, BROWSER)
    await assert.rejects(gateway.services.connectFlows.complete(query, BROWSER), (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'))
  })

  it('a forged or altered state is refused without spending the genuine state\'s record', async (t) => {
    const { gateway } = await setup(t)
    const query = await consentedCallback(gateway.services, 'github', ALICE, 'alice')
    const state = query.get('state') ?? ''
    for (const forged of ['x', `${state.split('.')[0] ?? ''}.AAAA`, `other.${state.split('.')[1] ?? ''}`]) {
      const bad = new URLSearchParams(query)
      bad.set('state', forged)
      await assert.rejects(gateway.services.connectFlows.complete(bad, BROWSER), (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'))
    }
    const none = new URLSearchParams(query)
    none.delete('state')
    await assert.rejects(gateway.services.connectFlows.complete(none, BROWSER), (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'))
    assert.equal((await gateway.services.connectFlows.complete(query, BROWSER)).principal.id, 'alice', 'the genuine state still completes')
  })

  it('a state started by alice\'s browser lands in alice\'s vault whatever account consents there; bob stays unconnected', async (t) => {
    const { gateway } = await setup(t)
    // The account chosen at the authorization server is alice's business: the record decides the principal.
    const query = await consentedCallback(gateway.services, 'github', ALICE, 'bob-at-github')
    const done = await gateway.services.connectFlows.complete(query, BROWSER)
    assert.deepEqual(done.principal, ALICE)
    const provider = gateway.services.providers.for(gateway.upstream('github'))
    assert.equal(await provider.needsConnect?.(gateway.upstream('github'), { principal: BOB }), true)
    assert.equal(await provider.needsConnect?.(gateway.upstream('github'), { principal: ALICE }), false)
    await assert.rejects(provider.headersFor(gateway.upstream('github'), { principal: BOB }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED'))
  })

  it('a callback brought to another browser than the one that started the flow is refused, stores nothing and spends the state', async (t) => {
    const { gateway } = await setup(t)
    // Mallory starts a connect for herself and hands the authorization server's page to Bob (the mirror of a forwarded link).
    const query = await consentedCallback(gateway.services, 'github', ALICE, 'bob-at-github')
    for (const other of ['another-browser', undefined]) {
      const copy = new URLSearchParams(query)
      await assert.rejects(gateway.services.connectFlows.complete(copy, other), (err: unknown) =>
        other === 'another-browser' ? isSwitchboardError(err, 'SB_ERR_CONNECT_IDENTITY') && err.details.upstream === 'github' : isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'))
    }
    assert.deepEqual(await gateway.services.connectFlows.list(), [], 'nothing stored')
    await assert.rejects(gateway.services.connectFlows.complete(query, BROWSER), (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONNECT_STATE'), 'the state is spent')
  })

  it('a connect link is valid only for its upstream and only as issued, and is spent once', async (t) => {
    const { gateway } = await setup(t)
    const flows = gateway.services.connectFlows
    const link = await flows.linkFor('github', ALICE)
    const url = new URL(link.url)
    assert.equal(url.pathname, '/connect/github')
    const token = url.searchParams.get('link') ?? ''
    const read = await flows.readLink('github', token)
    assert.equal(read.status, 'valid')
    assert.ok(read.status === 'valid')
    assert.deepEqual([read.principal, read.elicitationId], [ALICE, link.elicitationId])
    assert.equal((await flows.readLink('linear', token)).status, 'invalid')
    assert.equal((await flows.readLink('github', `${token.slice(0, -2)}xx`)).status, 'invalid')
    const spends = await Promise.all([flows.spendLink(read), flows.spendLink(read)])
    assert.deepEqual(spends.sort(), [false, true], 'of two spends at once, one wins')
    assert.equal((await flows.readLink('github', token)).status, 'used')
  })

  it('denied consent completes with SB_ERR_CONNECT_DENIED naming the upstream, and stores nothing', async (t) => {
    const { gateway } = await setup(t)
    const authorize = await gateway.services.connectFlows.authorizationUrl('github', ALICE, BROWSER)
    const callback = await consent(authorize, { login: 'alice', decision: 'deny' })
    await assert.rejects(gateway.services.connectFlows.complete(callback.searchParams, BROWSER), (err: unknown) =>
      isSwitchboardError(err, 'SB_ERR_CONNECT_DENIED') && err.details.upstream === 'github' && err.details.consentRefused === true)
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
