import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import * as oauth from 'oauth4webapi'
import { createAuthorizationServerDiscovery, type AuthorizationServerDiscovery } from '../../../../src/credentials/oauth/authorization-server.ts'
import { createDiscoveryGuard, type DiscoveryGuardOptions } from '../../../../src/credentials/oauth/discovery-guard.ts'
import { serverOptions } from '../../../../src/credentials/oauth/http-options.ts'
import { authorizationUrl } from '../../../../src/credentials/oauth/token-requests.ts'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { fakeResolver, fetchVia, metadataAt, startFakeAuthorizationServer, startFakeUpstream, startTrap } from './discovery-servers.ts'

const PUBLIC_NAME = 'mcp.example.test'
const PUBLIC_URL = `https://${PUBLIC_NAME}/mcp`

function discovery (t: TestContext, guard: DiscoveryGuardOptions, upstreamFetch?: typeof fetch): AuthorizationServerDiscovery {
  const made = createDiscoveryGuard(guard)
  t.after(() => made.close())
  return createAuthorizationServerDiscovery({ guard: made, ...(upstreamFetch === undefined ? {} : { upstreamFetch }) })
}

async function refused (promise: Promise<unknown>, ...patterns: RegExp[]): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'), String(err))
    for (const pattern of patterns) assert.match(err.message, pattern)
    return true
  })
}

describe('discovery refuses what an upstream could not reach itself', () => {
  it('a public upstream\'s 401 naming the admin listener on loopback is refused, and nothing connects there', async (t) => {
    const admin = await startTrap(t)
    const upstream = await startFakeUpstream(t, { publicOrigin: `https://${PUBLIC_NAME}`, resourceMetadata: () => `${admin.origin}/admin/reload?token=abc` })
    const d = discovery(t, { resolve: fakeResolver({ [PUBLIC_NAME]: ['93.184.215.14'] }), listeners: () => [{ host: '127.0.0.1', port: admin.port }] }, fetchVia(PUBLIC_NAME, upstream.origin))
    await refused(d.forUpstream({ name: 'pub', url: PUBLIC_URL }), /upstream pub refused the protected-resource metadata/, new RegExp(`at 127\\.0\\.0\\.1:${admin.port}: it is not on the upstream's own origin`))
    await assert.rejects(d.forUpstream({ name: 'pub', url: PUBLIC_URL }), (err: unknown) => !(err as Error).message.includes('token=abc'))
    assert.equal(admin.connections, 0)
  })

  it('a public upstream\'s metadata naming an authorization server on loopback, a private or a link-local address is refused unfetched', async (t) => {
    const trap = await startTrap(t)
    const resolve = fakeResolver({ [PUBLIC_NAME]: ['93.184.215.14'], 'internal.example': ['10.0.0.5'], 'metadata.example': ['169.254.169.254'] })
    for (const [issuer, reason] of [
      [trap.origin, /plain http|loopback address/],
      [`https://127.0.0.1:${trap.port}`, /loopback address \(127\.0\.0\.1\)/],
      [`https://[::ffff:127.0.0.1]:${trap.port}`, /loopback address/],
      ['https://internal.example', /private address \(10\.0\.0\.5\)/],
      ['https://metadata.example', /link-local address \(169\.254\.169\.254\)/]
    ] as const) {
      const upstream = await startFakeUpstream(t, { publicOrigin: `https://${PUBLIC_NAME}`, resourceMetadata: (self) => `${self}/.well-known/oauth-protected-resource/mcp`, authorizationServers: () => [issuer] })
      const d = discovery(t, { resolve }, fetchVia(PUBLIC_NAME, upstream.origin))
      await refused(d.forUpstream({ name: 'pub', url: PUBLIC_URL }), /upstream pub refused the authorization server it names/, reason)
    }
    assert.equal(trap.connections, 0)
    assert.equal(resolve.calls.get('internal.example'), 1, 'resolved to be checked, never connected')
  })

  it('DNS rebinding: an authorization server public at the check and loopback at the connection is refused before connecting', async (t) => {
    const trap = await startTrap(t)
    const resolve = fakeResolver({ [PUBLIC_NAME]: ['93.184.215.14'], 'as.example.test': (call) => call === 1 ? ['8.8.8.8'] : ['127.0.0.1'] })
    const upstream = await startFakeUpstream(t, { publicOrigin: `https://${PUBLIC_NAME}`, authorizationServers: () => [`https://as.example.test:${trap.port}`] })
    const d = discovery(t, { resolve }, fetchVia(PUBLIC_NAME, upstream.origin))
    await refused(d.forUpstream({ name: 'pub', url: PUBLIC_URL }), /upstream pub refused a connection at as\.example\.test:\d+: it resolves to a loopback address/)
    assert.equal(trap.connections, 0)
  })

  it('a loopback upstream whose metadata names the gateway\'s own admin or public port is refused unfetched', async (t) => {
    const admin = await startTrap(t)
    const mcp = await startTrap(t)
    const listeners = [{ host: '0.0.0.0', port: mcp.port }, { host: '127.0.0.1', port: admin.port }]
    for (const target of [admin, mcp]) {
      const upstream = await startFakeUpstream(t, { authorizationServers: () => [target.origin] })
      const d = discovery(t, { listeners: () => listeners })
      await refused(d.forUpstream({ name: 'local', url: upstream.mcpUrl }), new RegExp(`at 127\\.0\\.0\\.1:${target.port}: it is one of the gateway's own listeners`))
    }
    assert.equal(admin.connections + mcp.connections, 0)
  })

  for (const [endpoint, value, reason] of [
    ['authorization_endpoint', 'javascript:alert(1)//', /scheme javascript: is not https/],
    ['authorization_endpoint', 'data:text/html,<script>alert(1)</script>', /scheme data: is not https/],
    ['token_endpoint', 'http://10.0.0.5/token', /plain http/],
    ['registration_endpoint', 'file:///etc/passwd', /scheme file:/],
    ['jwks_uri', 'https://0.0.0.0/keys', /unroutable address/]
  ] as const) {
    it(`an authorization server whose ${endpoint} is ${value.slice(0, 24)} is refused`, async (t) => {
      const as = await startFakeAuthorizationServer(t, (self) => metadataAt(self, { [endpoint]: value }))
      const upstream = await startFakeUpstream(t, { authorizationServers: () => [as.origin] })
      await refused(discovery(t, {}).forUpstream({ name: 'local', url: upstream.mcpUrl }), new RegExp(`refused the authorization server's ${endpoint}`), reason)
    })
  }

  it('metadata whose issuer is not the authorization server named is refused, on the RFC 8414 and OpenID paths and the 2025-03-26 fallback', async (t) => {
    const as = await startFakeAuthorizationServer(t, () => metadataAt('http://127.0.0.1:1'))
    const upstream = await startFakeUpstream(t, { authorizationServers: () => [as.origin] })
    await assert.rejects(discovery(t, {}).forUpstream({ name: 'local', url: upstream.mcpUrl }), (err: unknown) => {
      assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
      assert.match(err.message, /no RFC 8414 or OpenID Connect metadata for issuer/)
      assert.equal((err.cause as { code?: unknown }).code, oauth.JSON_ATTRIBUTE_COMPARISON)
      return true
    })
    assert.deepEqual(as.requests, ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'])
    const fallback = await startFakeUpstream(t, { noMetadata: true, asMetadata: () => metadataAt('http://127.0.0.1:1') })
    await assert.rejects(discovery(t, {}).forUpstream({ name: 'old', url: fallback.mcpUrl }), (err: unknown) => {
      assert.equal((err as Error & { cause: { code?: unknown } }).cause.code, oauth.JSON_ATTRIBUTE_COMPARISON)
      return true
    })
  })

  it('a loopback upstream naming a loopback authorization server is found, and its endpoints are reached through the guard', async (t) => {
    const as = await startFakeAuthorizationServer(t, (self) => metadataAt(self))
    const upstream = await startFakeUpstream(t, { resourceMetadata: (self) => `${self}/.well-known/oauth-protected-resource/mcp`, authorizationServers: () => [as.origin] })
    const found = await discovery(t, {}).forUpstream({ name: 'local', url: upstream.mcpUrl })
    assert.equal(found.as.issuer, as.origin)
    assert.equal(typeof serverOptions(found.as)[oauth.customFetch], 'function', 'token requests go through the guarded fetch')
    const configured = await discovery(t, {}).forUpstream({ name: 'local', url: upstream.mcpUrl, issuer: as.origin })
    assert.equal(serverOptions(configured.as)[oauth.customFetch], undefined, 'a configured issuer is trusted as written')
  })

  it('an authorization URL with a non-web scheme is never made, even from a configured server', async () => {
    const as: oauth.AuthorizationServer = { issuer: 'https://as.example.test', authorization_endpoint: 'javascript:alert(1)//' }
    const client = { client: { client_id: 'c' }, auth: oauth.None(), origin: 'configured' as const }
    await refused(authorizationUrl({ as, client }, { redirectUri: 'https://gw.example/cb', state: 's', codeVerifier: 'v'.repeat(43), resource: 'https://mcp.example.test/mcp', scopes: [] }), /scheme javascript:/)
  })
})
