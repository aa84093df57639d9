import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import type { ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { rawInitialize, rawPost, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

interface RpcReply { result?: Record<string, unknown>, error?: { code: number, message: string, data?: Record<string, unknown> } }

async function setup (t: TestContext, extra: Record<string, unknown> = {}): Promise<{ fixture: ControllableServerHandle, gw: RunningGateway }> {
  const fixture = await startControllableHttpServer({ name: 'alpha' })
  t.after(() => fixture.close())
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'alpha', transport: 'streamable-http', url: fixture.url, ...extra }] }))
  await waitReady(gw)
  return { fixture, gw }
}

let nextId = 1
async function rpc (gw: RunningGateway, sessionId: string, method: string, params: Record<string, unknown> = {}): Promise<RpcReply> {
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: nextId++, method, params }, { 'mcp-session-id': sessionId })
  return await res.json() as RpcReply
}

test('a subscribe refused because the upstream serves as many sessions as it may is an error, not an empty success', async (t) => {
  const { fixture, gw } = await setup(t, { isolation: 'session', maxSessionConnections: 1 })
  const a = await rawInitialize(gw.url)
  const b = await rawInitialize(gw.url)
  assert.deepEqual(await rpc(gw, a.sessionId, 'resources/subscribe', { uri: 'fixture://alpha/hello' }), { jsonrpc: '2.0', id: nextId - 1, result: {} })
  const subscribed = fixture.state.stats.subscribes
  assert.ok(subscribed >= 1, 'A subscribed on its own connection')
  const refused = await rpc(gw, b.sessionId, 'resources/subscribe', { uri: 'fixture://alpha/hello' })
  assert.equal(refused.result, undefined, 'no subscription that nothing serves')
  assert.equal(refused.error?.code, -32603)
  assert.deepEqual(refused.error?.data, { 'switchboard/error': { code: 'SB_ERR_SESSION_LIMIT', upstream: 'alpha' } })
  assert.deepEqual(gw.gateway.sessions.peek(b.sessionId)?.subscribed.size, 0, 'B holds no subscription')
  assert.equal(fixture.state.stats.subscribes, subscribed)
})

test('an upstream that fails to unsubscribe a closed session\'s last subscription is logged with the error', async (t) => {
  const { fixture, gw } = await setup(t)
  const a = await rawInitialize(gw.url)
  await rpc(gw, a.sessionId, 'resources/subscribe', { uri: 'fixture://alpha/hello' })
  assert.equal(fixture.state.stats.subscribes, 1)
  fixture.state.refuseUnsubscribe = true
  const res = await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': a.sessionId } })
  assert.equal(res.status, 200)
  await waitFor(() => fixture.state.stats.unsubscribes === 1, 'the upstream to be asked')
  await waitFor(() => gw.logs.some(l => /unsubscribing a closed session's last subscriber failed/.test(String(l.msg))), 'the warning')
  const line = gw.logs.find(l => /unsubscribing a closed session's last subscriber failed/.test(String(l.msg))) as Record<string, unknown>
  assert.equal(line.upstream, 'alpha')
  assert.equal(line.uri, 'fixture://alpha/hello')
  const err = line.err as { type: string, message: string }
  assert.equal(err.type, 'RpcError', 'the Error itself, serialized by pino')
  assert.match(err.message, /unsubscribe refused/)
})
