import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { revealInto } from '../../../../src/auth/secret.ts'
import { canonicalResource, createAuthorizationServerDiscovery } from '../../../../src/credentials/oauth/authorization-server.ts'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { CODE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../../../fixtures/authorization-server.ts'
import { startProtectedUpstream, type ProtectedUpstream } from '../../../fixtures/protected-upstream.ts'
import { ALICE, BOB, REDIRECT_URI, connect, memoryStore, newKey, replica, upstreamsOf } from './oauth-harness.ts'

async function setup (t: TestContext): Promise<{ as: AuthorizationServer, upstream: ProtectedUpstream }> {
  const as = await startAuthorizationServer(t, { redirectUris: [REDIRECT_URI] })
  const upstream = await startProtectedUpstream(t, { authorizationServer: as })
  t.after(() => { assert.deepEqual(as.serverErrors, []) })
  return { as, upstream }
}

async function whoami (t: TestContext, url: string, authorization: string): Promise<unknown> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization } } }))
  t.after(async () => { await client.close() })
  return (await client.callTool({ name: 'whoami', arguments: {} })).structuredContent
}

describe('authorization server discovery', () => {
  it('finds the authorization server from the upstream\'s 401: resource metadata, then RFC 8414 metadata, with the challenge\'s scopes', async (t) => {
    const { as, upstream } = await setup(t)
    const found = await createAuthorizationServerDiscovery().forUpstream({ name: 'github', url: upstream.mcpUrl })
    assert.equal(found.as.issuer, as.issuer)
    assert.equal(found.as.token_endpoint, as.tokenEndpoint)
    assert.equal(found.resource, upstream.mcpUrl)
    assert.deepEqual(found.scopes, ['mcp:tools', 'mcp:admin'])
  })

  it('falls back to the well-known metadata when the 401 names none', async (t) => {
    const { as, upstream } = await setup(t)
    // A front that drops the challenge's resource_metadata and forwards the rest to the upstream.
    const front = createServer((request, response) => {
      void (async () => {
        const body: Buffer[] = []
        for await (const chunk of request) body.push(chunk as Buffer)
        const target = new URL(request.url ?? '/', upstream.url)
        const answer = await fetch(target, { method: request.method, headers: request.headers as Record<string, string>, body: body.length === 0 ? undefined : Buffer.concat(body), redirect: 'manual' })
        const headers = Object.fromEntries(answer.headers)
        if (answer.status === 401) headers['www-authenticate'] = 'Bearer'
        const text = (await answer.text()).replaceAll(upstream.url, `http://127.0.0.1:${(front.address() as AddressInfo).port}`)
        delete headers['content-length']
        response.writeHead(answer.status, headers).end(text)
      })()
    })
    await new Promise<void>((resolve) => { front.listen(0, '127.0.0.1', resolve) })
    t.after(() => new Promise<void>((resolve) => { front.close(() => { resolve() }); front.closeAllConnections() }))
    const frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}/mcp`
    const found = await createAuthorizationServerDiscovery().forUpstream({ name: 'github', url: frontUrl })
    assert.equal(found.as.issuer, as.issuer)
    assert.equal(found.resource, frontUrl)
    assert.deepEqual(found.scopes, ['mcp:tools', 'mcp:admin'], 'scopes_supported of the metadata')
  })

  it('a configured issuer skips the upstream; the resource is the upstream\'s canonical URL', async (t) => {
    const { as } = await setup(t)
    const found = await createAuthorizationServerDiscovery().forUpstream({ name: 'x', url: 'HTTP://127.0.0.1:9/mcp#frag', issuer: as.issuer })
    assert.equal(found.as.issuer, as.issuer)
    assert.equal(found.resource, 'http://127.0.0.1:9/mcp')
    assert.equal(canonicalResource('http://LOCALHOST:80/a'), 'http://localhost/a')
  })

  it('an upstream with no authorization server to find fails with SB_ERR_UPSTREAM_TOKEN', async (t) => {
    const nothing = createServer((_request, response) => { response.writeHead(404).end() })
    await new Promise<void>((resolve) => { nothing.listen(0, '127.0.0.1', resolve) })
    t.after(() => new Promise<void>((resolve) => { nothing.close(() => { resolve() }); nothing.closeAllConnections() }))
    const url = `http://127.0.0.1:${(nothing.address() as AddressInfo).port}/mcp`
    await assert.rejects(createAuthorizationServerDiscovery().forUpstream({ name: 'x', url }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
  })

  it('refuses plain http metadata off loopback', async () => {
    await assert.rejects(createAuthorizationServerDiscovery().forIssuer('http://example.invalid'), (err: unknown) => {
      assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
      assert.equal((err.cause as { code?: unknown }).code, 'OAUTH_HTTP_REQUEST_FORBIDDEN', 'refused before any request')
      return true
    })
  })
})

describe('per-user OAuth end to end (discovered from the upstream)', () => {
  it('each principal\'s connect gives a token whose whoami at the protected upstream is their own login', async (t) => {
    const { upstream } = await setup(t)
    const key = newKey()
    const gateway = replica(memoryStore(t, key), upstreamsOf([{
      name: 'github',
      transport: 'streamable-http',
      url: upstream.mcpUrl,
      isolation: 'principal',
      auth: { type: 'oauth', clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret }
    }]), key)
    await connect(gateway.services, 'github', ALICE, 'alice-login')
    await connect(gateway.services, 'github', BOB, 'bob-login')
    const provider = gateway.services.providers.for(gateway.upstream('github'))
    for (const [who, login] of [[ALICE, 'alice-login'], [BOB, 'bob-login']] as const) {
      const headers = revealInto({}, await provider.headersFor(gateway.upstream('github'), { principal: who }))
      assert.deepEqual(await whoami(t, upstream.mcpUrl, headers.authorization ?? ''), { sub: login, scope: 'mcp:tools mcp:admin' })
    }
  })
})
