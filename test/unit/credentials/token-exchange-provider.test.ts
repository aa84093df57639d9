import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { decodeJwt } from 'jose'
import { IncomingToken } from '../../../src/auth/incoming-token.ts'
import { revealInto } from '../../../src/auth/secret.ts'
import type { Principal } from '../../../src/auth/principal.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { EXCHANGE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../../fixtures/authorization-server.ts'
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

  it('without the caller\'s token, or for the gateway itself, there is nothing to exchange', async (t) => {
    const { gateway } = await setup(t)
    await assert.rejects(exchanged(gateway, ALICE, undefined), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
    const upstream = gateway.upstream('jira')
    await assert.rejects(gateway.services.providers.for(upstream).headersFor(upstream, undefined), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_AUTH'))
  })
})
