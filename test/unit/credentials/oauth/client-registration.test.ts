import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { decodeJwt } from 'jose'
import { revealInto } from '../../../../src/auth/secret.ts'
import { clientMetadataDocument, clientMetadataDocumentUrl, clientSecretBasic } from '../../../../src/credentials/oauth/client-registration.ts'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { startAuthorizationServer, type AuthorizationServerOptions } from '../../../fixtures/authorization-server.ts'
import { ALICE, BOB, connect, memoryStore, newKey, replica, upstreamsOf } from './oauth-harness.ts'

const UPSTREAM_URL = 'http://127.0.0.1:9/mcp'

async function serverWith (t: TestContext, options: AuthorizationServerOptions): Promise<Awaited<ReturnType<typeof startAuthorizationServer>>> {
  const server = await startAuthorizationServer(t, options)
  t.after(() => { assert.deepEqual(server.serverErrors, []) })
  return server
}

function unregistered (issuer: string): ReturnType<typeof upstreamsOf> {
  return upstreamsOf([{ name: 'linear', transport: 'streamable-http', url: UPSTREAM_URL, isolation: 'principal', auth: { type: 'oauth', issuer, scopes: ['mcp:tools'] } }])
}

describe('OAuth client identity', () => {
  it('registers dynamically once for two replicas sharing a vault, and both complete connects with that client', async (t) => {
    const server = await serverWith(t, { dynamicRegistration: true })
    const key = newKey()
    const store = memoryStore(t, key)
    const upstreams = unregistered(server.issuer)
    const [one, two] = [replica(store, upstreams, key), replica(store, upstreams, key)]
    const [a, b] = await Promise.all([
      one.services.connectFlows.authorizationUrl('linear', ALICE, 'browser-a'),
      two.services.connectFlows.authorizationUrl('linear', BOB, 'browser-b')
    ])
    assert.equal(server.counts.registrations, 1)
    assert.equal(a.searchParams.get('client_id'), b.searchParams.get('client_id'))
    await connect(one.services, 'linear', ALICE, 'alice')
    await connect(two.services, 'linear', BOB, 'bob')
    // A restart: a new replica over the same store reuses the stored registration.
    const three = replica(store, upstreams, key)
    await connect(three.services, 'linear', ALICE, 'alice')
    assert.equal(server.counts.registrations, 1)
    const headers = revealInto({}, await three.services.providers.for(three.upstream('linear')).headersFor(three.upstream('linear'), { principal: BOB }))
    assert.equal(decodeJwt((headers.authorization ?? '').slice('Bearer '.length)).sub, 'bob')
  })

  it('uses its Client ID Metadata Document URL as client id where the server reads them', async (t) => {
    const server = await serverWith(t, { clientIdMetadataDocument: true, dynamicRegistration: true })
    let publicUrl = ''
    const documents = createServer((request, response) => {
      const expected = new URL(clientMetadataDocumentUrl(publicUrl, 'linear')).pathname
      if (request.url !== expected) response.writeHead(404).end()
      else response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(clientMetadataDocument(publicUrl, 'linear')))
    })
    await new Promise<void>((resolve) => { documents.listen(0, '127.0.0.1', resolve) })
    t.after(() => new Promise<void>((resolve) => { documents.close(() => { resolve() }); documents.closeAllConnections() }))
    // The fixture fetches https://127.0.0.1 documents over http (Client ID Metadata Documents must be https).
    publicUrl = `https://127.0.0.1:${(documents.address() as AddressInfo).port}`
    const key = newKey()
    const gateway = replica(memoryStore(t, key), unregistered(server.issuer), key, publicUrl)
    await connect(gateway.services, 'linear', ALICE, 'alice')
    const headers = revealInto({}, await gateway.services.providers.for(gateway.upstream('linear')).headersFor(gateway.upstream('linear'), { principal: ALICE }))
    const claims = decodeJwt((headers.authorization ?? '').slice('Bearer '.length))
    assert.equal(claims.client_id, `${publicUrl}/oauth/client/linear`)
    assert.equal(server.counts.registrations, 0, 'a metadata document is preferred to registration')
    assert.deepEqual(gateway.services.clientMetadataDocument('linear'), clientMetadataDocument(publicUrl, 'linear'))
  })

  it('the metadata document names the gateway, its one callback and no client secret', () => {
    assert.deepEqual(clientMetadataDocument('https://mcp.example.com/', 'github'), {
      client_id: 'https://mcp.example.com/oauth/client/github',
      client_name: 'Switchboard',
      redirect_uris: ['https://mcp.example.com/oauth/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none'
    })
  })

  it('accepts a registration whose issued secret comes without client_secret_expires_at, as not expiring', async (t) => {
    let registrations = 0
    const server = createServer((request, response) => {
      const json = (status: number, body: unknown): void => { response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)) }
      if (request.method === 'GET' && request.url === '/.well-known/oauth-authorization-server') {
        json(200, { issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, registration_endpoint: `${issuer}/register`, response_types_supported: ['code'], code_challenge_methods_supported: ['S256'], token_endpoint_auth_methods_supported: ['client_secret_basic'] })
      } else if (request.method === 'POST' && request.url === '/register') {
        registrations++
        json(201, { client_id: 'issued-client', client_secret: 'issued-secret', redirect_uris: [`${UPSTREAM_URL}/oauth/callback`] })
      } else {
        response.writeHead(404).end()
      }
    })
    await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
    t.after(() => new Promise<void>((resolve) => { server.close(() => { resolve() }); server.closeAllConnections() }))
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const key = newKey()
    const gateway = replica(memoryStore(t, key), unregistered(issuer), key)
    const url = await gateway.services.connectFlows.authorizationUrl('linear', ALICE, 'browser-a')
    assert.equal(url.searchParams.get('client_id'), 'issued-client')
    assert.equal(registrations, 1)
  })

  it('sends Basic client credentials with unreserved characters as they are and others form-urlencoded', () => {
    const basic = (clientId: string, secret: string): string => {
      const headers = new Headers()
      void clientSecretBasic(secret)({ issuer: 'https://as.example.com' }, { client_id: clientId }, new URLSearchParams(), headers)
      return Buffer.from((headers.get('authorization') ?? '').slice('Basic '.length), 'base64').toString('utf8')
    }
    assert.equal(basic('pre-registered_client.v1~x', 'pre-registered-secret'), 'pre-registered_client.v1~x:pre-registered-secret')
    assert.equal(basic('a:b c', 's&e=t/%'), 'a%3Ab+c:s%26e%3Dt%2F%25')
  })

  it('says what to register when the server offers neither metadata documents nor registration', async (t) => {
    const server = await serverWith(t, {})
    const key = newKey()
    const gateway = replica(memoryStore(t, key), unregistered(server.issuer), key)
    await assert.rejects(gateway.services.connectFlows.authorizationUrl('linear', ALICE, 'browser-a'), (err: unknown) => {
      assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_OAUTH_CLIENT'))
      assert.match(err.message, /register a client there with redirect URI http:\/\/127\.0\.0\.1:9\/oauth\/callback/)
      assert.match(err.message, /clientId/)
      return true
    })
  })
})
