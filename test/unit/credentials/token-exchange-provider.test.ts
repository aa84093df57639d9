import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { decodeJwt } from 'jose'
import { IncomingToken } from '../../../src/auth/incoming-token.ts'
import { revealInto } from '../../../src/auth/secret.ts'
import type { Principal } from '../../../src/auth/principal.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { EXCHANGE_CLIENT, TOKEN_EXCHANGE_GRANT, startAuthorizationServer, type AuthorizationServer } from '../../fixtures/authorization-server.ts'
import { ALICE, BOB, memoryStore, newKey, replica, upstreamsOf, type Replica } from './oauth/oauth-harness.ts'

const UPSTREAM_URL = 'http://127.0.0.1:9/mcp'

async function setup (t: TestContext, auth: Record<string, unknown> = {}): Promise<{ server: AuthorizationServer, gateway: Replica }> {
  const server = await startAuthorizationServer(t)
  t.after(() => { assert.deepEqual(server.serverErrors, []) })
  const key = newKey()
  const upstreams = upstreamsOf([{
    name: 'jira',
    transport: 'streamable-http',
    url: UPSTREAM_URL,
    isolation: 'principal',
    auth: { type: 'token_exchange', issuer: server.issuer, clientId: EXCHANGE_CLIENT.clientId, clientSecret: EXCHANGE_CLIENT.clientSecret, scope: 'mcp:tools', ...auth }
  }])
  return { server, gateway: replica(memoryStore(t, key), upstreams, key) }
}

async function exchanged (gateway: Replica, principal: Principal, incoming: string | undefined): Promise<string> {
  const upstream = gateway.upstream('jira')
  const who = incoming === undefined ? { principal } : { principal, token: new IncomingToken(incoming) }
  return (revealInto({}, await gateway.services.providers.for(upstream).headersFor(upstream, who)).authorization ?? '').replace(/^Bearer /, '')
}

describe('token exchange provider', () => {
  it('exchanges the caller\'s company JWT for a token of the same subject meant for the upstream, and reuses it until due', async (t) => {
    const { server, gateway } = await setup(t)
    const jwt = await server.issueCompanyJwt('alice')
    const token = await exchanged(gateway, ALICE, jwt)
    assert.notEqual(token, jwt, 'never the incoming token')
    const claims = decodeJwt(token)
    assert.equal(claims.sub, 'alice')
    assert.equal(claims.aud, UPSTREAM_URL)
    assert.equal(await exchanged(gateway, ALICE, jwt), token)
    assert.equal(server.counts.grants['urn:ietf:params:oauth:grant-type:token-exchange'], 1)
    assert.deepEqual(gateway.outcomes.map(([, , o]) => o), ['exchanged', 'ok'])
  })

  it('a configured audience is asked for instead of the upstream', async (t) => {
    const { server, gateway } = await setup(t, { audience: 'https://jira.example.com' })
    assert.equal(decodeJwt(await exchanged(gateway, ALICE, await server.issueCompanyJwt('alice'))).aud, 'https://jira.example.com')
  })

  it('a bad subject token fails that caller alone with SB_ERR_UPSTREAM_TOKEN; another caller\'s exchange is untouched', async (t) => {
    const { server, gateway } = await setup(t)
    const bobToken = await exchanged(gateway, BOB, await server.issueCompanyJwt('bob'))
    const forged = `${(await server.issueCompanyJwt('alice')).slice(0, -4)}AAAA`
    await assert.rejects(exchanged(gateway, ALICE, forged), (err: unknown) => {
      assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
      assert.ok(!err.message.includes(forged))
      return true
    })
    assert.ok(gateway.outcomes.some(([, , o]) => o === 'exchange_failed'))
    assert.equal(await exchanged(gateway, BOB, await server.issueCompanyJwt('bob')), bobToken)
    assert.equal(decodeJwt(bobToken).sub, 'bob')
  })

  it('a refused subject token is not presented again for retryAfterRefusalMs: the caller is told at once, with the same code and when to retry; a new token is tried at once', async (t) => {
    const { server, gateway } = await setup(t, { retryAfterRefusalMs: 60_000 })
    const refusedJwt = `${(await server.issueCompanyJwt('alice')).slice(0, -4)}AAAA`
    const failures: unknown[] = []
    for (let call = 0; call < 3; call++) await exchanged(gateway, ALICE, refusedJwt).catch((err: unknown) => { failures.push(err) })
    assert.equal(failures.length, 3)
    assert.equal(server.counts.grantErrors[TOKEN_EXCHANGE_GRANT], 1, 'one exchange asked for, none while backing off')
    for (const err of failures) assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
    const [first, second] = failures
    assert.ok(isSwitchboardError(first) && first.details.retryAfterMs === undefined)
    assert.ok(isSwitchboardError(second))
    assert.equal(typeof second.details.retryAfterMs, 'number')
    assert.ok(Number(second.details.retryAfterMs) <= 60_000)
    assert.match(second.message, /not asked again for this caller for another \d+ s \(retryAfterRefusalMs\)/)
    assert.deepEqual(gateway.outcomes.map(([, , o]) => o), ['exchange_failed', 'exchange_failed', 'exchange_failed'], 'once per lookup')
    // A fresh JWT of hers is another credential: tried at once, and it works.
    assert.equal(decodeJwt(await exchanged(gateway, ALICE, await server.issueCompanyJwt('alice'))).sub, 'alice')
    assert.equal(server.counts.grants[TOKEN_EXCHANGE_GRANT], 1)
  })

  it('retryAfterRefusalMs 0: every lookup asks the authorization server again', async (t) => {
    const { server, gateway } = await setup(t, { retryAfterRefusalMs: 0 })
    const refusedJwt = `${(await server.issueCompanyJwt('alice')).slice(0, -4)}AAAA`
    for (let call = 0; call < 2; call++) await assert.rejects(exchanged(gateway, ALICE, refusedJwt))
    assert.equal(server.counts.grantErrors[TOKEN_EXCHANGE_GRANT], 2)
  })

  it('without the caller\'s token, or for the gateway itself, there is nothing to exchange', async (t) => {
    const { gateway } = await setup(t)
    await assert.rejects(exchanged(gateway, ALICE, undefined), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
    const upstream = gateway.upstream('jira')
    await assert.rejects(gateway.services.providers.for(upstream).headersFor(upstream, undefined), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_AUTH'))
  })
})
