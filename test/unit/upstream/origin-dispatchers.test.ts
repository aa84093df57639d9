import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { CredentialHeaders } from '../../../src/credentials/credential-provider.ts'
import { Secret } from '../../../src/auth/secret.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { HttpClientTransport } from '../../../src/upstream/http-client-transport.ts'
import { OriginDispatchers } from '../../../src/upstream/origin-dispatchers.ts'
import { RpcPeer } from '../../../src/upstream/rpc-peer.ts'

interface Seen { path: string, headers: IncomingHttpHeaders, socket: number }

/** A loopback MCP-ish endpoint that answers every request with JSON and counts the TCP connections made to it. */
async function serve (t: TestContext, status = 200): Promise<{ origin: string, seen: Seen[], connections: () => number }> {
  const seen: Seen[] = []
  let connections = 0
  const server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, socket: req.socket.remotePort ?? 0 })
      const body = JSON.parse(text) as { id?: number }
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(status === 200 ? JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { ok: true } }) : '')
    })
  })
  server.on('connection', () => { connections++ })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, connections: () => connections }
}

function peerFor (t: TestContext, url: string, dispatchers: OriginDispatchers, credentials?: () => Promise<CredentialHeaders>): RpcPeer {
  const peer = new RpcPeer(new HttpClientTransport({ url: new URL(url), headers: {}, dispatchers, ...(credentials === undefined ? {} : { credentials }) }))
  t.after(() => peer.close())
  return peer
}

test('two upstreams on one origin share one socket pool: the socket opened for one serves the other', async (t) => {
  const server = await serve(t)
  const dispatchers = new OriginDispatchers()
  const a = peerFor(t, `${server.origin}/a/mcp`, dispatchers)
  const b = peerFor(t, `${server.origin}/b/mcp`, dispatchers)
  assert.equal(dispatchers.size, 1)
  const pool = dispatchers.peek(server.origin)
  assert.ok(pool !== undefined)
  // The socket goes back to the pool a moment after the answer is read: wait for that, not for a time.
  // (Bounded: a transport with a pool of its own never frees a socket in this one.)
  const idle = async (): Promise<void> => {
    for (let turns = 0; turns < 1_000 && (pool.stats.running > 0 || pool.stats.free === 0); turns++) await new Promise(resolve => setImmediate(resolve))
  }
  for (let i = 0; i < 3; i++) {
    assert.deepEqual(await a.request('tools/call', { name: 'x' }), { ok: true })
    await idle()
    assert.deepEqual(await b.request('tools/call', { name: 'y' }), { ok: true })
    await idle()
  }
  assert.deepEqual(server.seen.map(s => s.path), ['/a/mcp', '/b/mcp', '/a/mcp', '/b/mcp', '/a/mcp', '/b/mcp'])
  assert.equal(server.connections(), 1, 'one keep-alive socket served both upstreams (a pool per transport needs two)')
  assert.equal(new Set(server.seen.map(s => s.socket)).size, 1)
})

test('an origin\'s pool is destroyed when its last transport closes, and made again on next use', async (t) => {
  const server = await serve(t)
  const dispatchers = new OriginDispatchers()
  const a = peerFor(t, `${server.origin}/a/mcp`, dispatchers)
  const b = peerFor(t, `${server.origin}/b/mcp`, dispatchers)
  const pool = dispatchers.peek(server.origin)
  await a.close()
  assert.equal(dispatchers.peek(server.origin), pool, 'still held by the other transport')
  assert.deepEqual(await b.request('tools/call', {}), { ok: true })
  await b.close()
  assert.equal(dispatchers.size, 0)
  assert.equal(pool?.destroyed, true)
  const c = peerFor(t, `${server.origin}/c/mcp`, dispatchers)
  assert.deepEqual(await c.request('tools/call', {}), { ok: true })
})

test('the transport asks for its credentials on each request, so a changed token goes out on the next one', async (t) => {
  const server = await serve(t)
  let asked = 0
  const peer = peerFor(t, `${server.origin}/mcp`, new OriginDispatchers(), async () => {
    asked++
    return { authorization: new Secret(`Bearer token-${asked}`) }
  })
  await peer.request('tools/call', {})
  await peer.request('tools/call', {})
  assert.deepEqual(server.seen.map(s => s.headers.authorization), ['Bearer token-1', 'Bearer token-2'])
})

for (const status of [401, 403]) {
  test(`an HTTP ${status} fails the request with SB_ERR_UPSTREAM_AUTH and its status`, async (t) => {
    const server = await serve(t, status)
    const peer = peerFor(t, `${server.origin}/mcp`, new OriginDispatchers())
    await assert.rejects(peer.request('tools/call', {}), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_AUTH') && err.details.status === status && !err.message.includes('Bearer'))
  })
}
