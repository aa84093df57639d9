import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { createDiscoveryGuard, type DiscoveryGuardOptions, type DiscoveryScope } from '../../../../src/credentials/oauth/discovery-guard.ts'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { fakeResolver, startTrap } from './discovery-servers.ts'

const PUBLIC_IP = '93.184.215.14'

const resolve = fakeResolver({
  'mcp.example.test': [PUBLIC_IP],
  'as.example.test': ['8.8.8.8'],
  'internal.example': ['10.0.0.5'],
  'metadata.example': ['169.254.169.254'],
  'split.example': ['8.8.8.8', '10.0.0.5'],
  'mapped.example': ['::ffff:127.0.0.1'],
  'private-upstream.example': ['10.0.0.9'],
  'as.loopback.test': ['127.0.0.1'],
  localhost: ['127.0.0.1', '::1']
})

async function scopeOf (t: TestContext, url: string, options: DiscoveryGuardOptions = {}): Promise<DiscoveryScope> {
  const guard = createDiscoveryGuard({ resolve, localAddresses: () => ['192.168.1.7'], ...options })
  t.after(() => guard.close())
  return await guard.scopeFor({ name: 'up', url })
}

async function refuses (scope: DiscoveryScope, url: string, reason: RegExp): Promise<void> {
  await assert.rejects(scope.check(url, 'the test URL'), (err: unknown) => {
    assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'), String(err))
    assert.match(err.message, /^OAuth discovery for upstream up refused the test URL/)
    assert.match(err.message, reason)
    return true
  }, url)
}

describe('discovery guard: what an upstream\'s answers may aim the gateway at', () => {
  it('refuses every scheme but https and http, whatever the upstream', async (t) => {
    const scope = await scopeOf(t, 'http://127.0.0.1:9/mcp')
    for (const url of ['javascript:alert(1)//', 'data:text/html,<script>alert(1)</script>', 'file:///etc/passwd', 'ftp://127.0.0.1/x', 'ws://127.0.0.1:9/x', 'not a url']) {
      await refuses(scope, url, /scheme|not a URL/)
    }
  })

  it('a public upstream may point at https on public addresses only, every resolved address checked', async (t) => {
    const scope = await scopeOf(t, 'https://mcp.example.test/mcp')
    assert.equal(scope.reach, 'public')
    assert.equal((await scope.check('https://as.example.test/oauth?x=1', 'the test URL')).host, 'as.example.test')
    await refuses(scope, 'http://as.example.test/', /plain http/)
    await refuses(scope, 'https://internal.example/', /private address \(10\.0\.0\.5\)/)
    await refuses(scope, 'https://metadata.example/latest', /link-local address/)
    await refuses(scope, 'https://split.example/', /private address/)
    await refuses(scope, 'https://mapped.example/', /loopback address/)
    for (const url of ['https://127.0.0.1:8443/', 'https://[::1]/', 'https://[::ffff:7f00:1]/', 'https://10.1.2.3/', 'https://172.16.0.1/', 'https://192.168.0.1/', 'https://100.64.0.1/', 'https://[fe80::1]/', 'https://[fd00::1]/']) {
      await refuses(scope, url, /(loopback|private|link-local) address/)
    }
    await refuses(scope, 'https://0.0.0.0/', /unroutable/)
    await refuses(scope, 'https://[::]/', /unroutable/)
    await refuses(scope, 'https://nowhere.example/', /does not resolve/)
  })

  it('names the host and never the URL\'s path or query', async (t) => {
    const scope = await scopeOf(t, 'https://mcp.example.test/mcp')
    await assert.rejects(scope.check('https://internal.example:8443/secret-path?token=abc', 'the test URL'), (err: unknown) => {
      assert.ok(isSwitchboardError(err))
      assert.match(err.message, /at internal\.example:8443:/)
      assert.doesNotMatch(err.message, /secret-path|token=abc/)
      assert.deepEqual(err.details, { upstream: 'up', host: 'internal.example:8443', refused: 'discovery' })
      return true
    })
  })

  it('a private upstream may point at its network and the internet, never at this machine or link-local', async (t) => {
    const scope = await scopeOf(t, 'https://private-upstream.example/mcp')
    assert.equal(scope.reach, 'private')
    await scope.check('https://internal.example/', 'the test URL')
    await scope.check('https://as.example.test/', 'the test URL')
    await refuses(scope, 'https://127.0.0.1/', /loopback address/)
    await refuses(scope, 'https://169.254.169.254/', /link-local address/)
    await refuses(scope, 'http://internal.example/', /plain http/)
  })

  it('an upstream whose name resolves to mixed classes counts as public', async (t) => {
    const scope = await scopeOf(t, 'https://split.example/mcp')
    assert.equal(scope.reach, 'public')
  })

  it('a loopback upstream may point at http on loopback, https anywhere, but never at the gateway\'s listeners', async (t) => {
    const listeners = [{ host: '127.0.0.1', port: 7001 }, { host: '0.0.0.0', port: 7002 }, { host: '127.0.0.1', port: 0 }]
    const scope = await scopeOf(t, 'http://localhost:9/mcp', { listeners: () => listeners, publicUrl: 'https://gw.example.test' })
    assert.equal(scope.reach, 'loopback')
    await scope.check('http://127.0.0.1:7000/', 'the test URL')
    await scope.check('http://as.loopback.test:7000/', 'the test URL')
    await scope.check('https://internal.example/', 'the test URL')
    await refuses(scope, 'http://internal.example/', /plain http/)
    await refuses(scope, 'http://127.0.0.1:7001/admin', /gateway's own listeners/)
    await refuses(scope, 'http://[::1]:7001/', /gateway's own listeners/)
    await refuses(scope, 'http://127.0.0.2:7002/', /gateway's own listeners/)
    await refuses(scope, 'https://192.168.1.7:7002/', /gateway's own listeners/)
    await refuses(scope, 'https://gw.example.test/', /gateway's own public URL/)
    await refuses(scope, 'https://192.168.1.7:7001/', /gateway's own listeners/)
    await scope.check('https://192.168.1.8:7001/', 'the test URL')
    await scope.check('http://127.0.0.1:1/', 'the test URL')
  })

  it('the guarded fetch connects to the address it checked, and follows no redirect', async (t) => {
    const trap = await startTrap(t)
    const hosts: string[] = []
    const server = createServer((request, response) => {
      hosts.push(request.headers.host ?? '')
      response.writeHead(302, { location: `${trap.origin}/next` }).end()
    })
    await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
    t.after(() => new Promise<void>((resolve) => { server.close(() => { resolve() }); server.closeAllConnections() }))
    const port = (server.address() as AddressInfo).port
    const scope = await scopeOf(t, 'http://127.0.0.1:9/mcp')
    const response = await scope.fetch(`http://as.loopback.test:${port}/start`)
    await response.body?.cancel()
    assert.equal(response.status, 302)
    assert.deepEqual(hosts, [`as.loopback.test:${port}`])
    assert.equal(trap.connections, 0)
  })

  it('DNS rebinding: a name public at the check and private at the connection is refused before any connection', async (t) => {
    const trap = await startTrap(t)
    const rebinding = fakeResolver({ 'mcp.example.test': [PUBLIC_IP], 'rebind.example': (call) => call === 1 ? ['8.8.8.8'] : ['127.0.0.1'] })
    const scope = await scopeOf(t, 'https://mcp.example.test/mcp', { resolve: rebinding })
    await scope.check(`https://rebind.example:${trap.port}/`, 'the test URL')
    await assert.rejects(scope.fetch(`https://rebind.example:${trap.port}/.well-known/oauth-authorization-server`), (err: unknown) => {
      const cause = (err as Error).cause
      assert.ok(isSwitchboardError(cause, 'SB_ERR_UPSTREAM_TOKEN'), String(cause))
      assert.match(cause.message, /refused a connection at rebind\.example:\d+: it resolves to a loopback address/)
      return true
    })
    assert.equal(rebinding.calls.get('rebind.example'), 2)
    assert.equal(trap.connections, 0)
  })

  it('the upstream\'s own origin is asked at the address its reach was judged by, and nothing else through that fetch', async (t) => {
    const trap = await startTrap(t)
    const turning = fakeResolver({ 'turning.test': (call) => call === 1 ? ['127.0.0.1'] : ['10.0.0.5'] })
    const guard = createDiscoveryGuard({ resolve: turning })
    t.after(() => guard.close())
    const scope = await guard.scopeFor({ name: 'up', url: `http://turning.test:${trap.port}/mcp` })
    t.after(() => scope.close())
    assert.equal(scope.reach, 'loopback')
    const response = await scope.upstreamFetch(`http://turning.test:${trap.port}/.well-known/oauth-protected-resource`)
    await response.body?.cancel()
    assert.equal(response.status, 200)
    assert.equal(trap.requests, 1)
    assert.equal(turning.calls.get('turning.test'), 1, 'resolved once, for the reach and the connection alike')
    await assert.rejects(scope.upstreamFetch(`http://127.0.0.1:${trap.port}/`), (err: unknown) => isSwitchboardError((err as Error).cause, 'SB_ERR_UPSTREAM_TOKEN'))
    assert.equal(trap.requests, 1)
  })

  it('the guarded fetch refuses a non-web scheme without resolving anything', async (t) => {
    const scope = await scopeOf(t, 'http://127.0.0.1:9/mcp')
    await assert.rejects(scope.fetch('file:///etc/passwd'), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
  })
})
