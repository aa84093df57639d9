import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { decodeJwt } from 'jose'
import { revealInto } from '../../../src/auth/secret.ts'
import type { CredentialRequest } from '../../../src/credentials/credential-provider.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { SERVICE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../../fixtures/authorization-server.ts'
import { ALICE, BOB, memoryStore, newKey, replica, upstreamsOf, type Replica } from './oauth/oauth-harness.ts'

const UPSTREAM_URL = 'http://127.0.0.1:9/mcp'

async function authorizationServer (t: TestContext): Promise<AuthorizationServer> {
  const server = await startAuthorizationServer(t)
  t.after(() => { assert.deepEqual(server.serverErrors, []) })
  return server
}

function service (auth: Record<string, unknown>): ReturnType<typeof upstreamsOf> {
  return upstreamsOf([{
    name: 'internal',
    transport: 'streamable-http',
    url: UPSTREAM_URL,
    auth: { type: 'client_credentials', clientId: SERVICE_CLIENT.clientId, clientSecret: SERVICE_CLIENT.clientSecret, scope: 'mcp:tools', ...auth }
  }])
}

async function token (gateway: Replica, who: CredentialRequest | undefined): Promise<string> {
  const upstream = gateway.upstream('internal')
  return (revealInto({}, await gateway.services.providers.for(upstream).headersFor(upstream, who)).authorization ?? '').replace(/^Bearer /, '')
}

describe('client credentials provider', () => {
  it('one service token for every principal and the gateway itself, for the upstream as resource, asked for once', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const gateway = replica(memoryStore(t, key), service({ issuer: server.issuer }), key)
    const tokens = await Promise.all([token(gateway, { principal: ALICE }), token(gateway, { principal: BOB }), token(gateway, undefined)])
    assert.equal(new Set(tokens).size, 1)
    assert.equal(server.counts.grants.client_credentials, 1)
    const claims = decodeJwt(tokens[0] ?? '')
    assert.equal(claims.aud, UPSTREAM_URL)
    assert.equal(claims.client_id, SERVICE_CLIENT.clientId)
    assert.equal(claims.sub, SERVICE_CLIENT.clientId, 'the service account, no user')
    assert.deepEqual(gateway.outcomes.filter(([, , o]) => o === 'refreshed'), [['internal', 'client_credentials', 'refreshed']])
  })

  it('a configured token endpoint is used as given, and replicas sharing a vault share the token', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const store = memoryStore(t, key)
    const upstreams = service({ tokenEndpoint: server.tokenEndpoint })
    const [one, two] = [replica(store, upstreams, key), replica(store, upstreams, key)]
    assert.equal(await token(one, undefined), await token(two, undefined))
    assert.equal(server.counts.grants.client_credentials, 1)
  })

  it('a 401 gets a new service token', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const gateway = replica(memoryStore(t, key), service({ issuer: server.issuer }), key)
    const before = await token(gateway, undefined)
    assert.equal(await gateway.services.providers.for(gateway.upstream('internal')).refused?.(gateway.upstream('internal'), undefined), true)
    assert.notEqual(await token(gateway, undefined), before)
    assert.equal(server.counts.grants.client_credentials, 2)
  })

  it('a wrong client secret fails with SB_ERR_UPSTREAM_TOKEN whose message holds no secret', async (t) => {
    const server = await authorizationServer(t)
    const key = newKey()
    const gateway = replica(memoryStore(t, key), service({ issuer: server.issuer, clientSecret: 'not-the-secret' }), key)
    await assert.rejects(token(gateway, undefined), (err: unknown) => {
      assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
      assert.ok(!err.message.includes('not-the-secret'))
      return true
    })
    assert.deepEqual(gateway.outcomes, [['internal', 'client_credentials', 'refresh_failed']])
  })
})
