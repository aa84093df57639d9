import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createConnection } from 'node:net'
import { ADMIN_TOKEN, readNamedEvents, signIn, startConsoleGateway } from '../helpers/admin-console.ts'
import { connectClient, metricValue, waitFor } from '../helpers/start-gateway.ts'

const BEARER = { authorization: `Bearer ${ADMIN_TOKEN}` }

interface Status { upstreams: Array<{ name: string, state: string }>, sessions: { total: number }, stats: unknown, pendingApprovals: number }
interface Call { tool: string, upstream: string, outcome: string, principal: string, durationMs: number }

describe('GET /admin/events', () => {
  it('streams a status with the upstreams at once, and each finished tools/call as a call event', async (t) => {
    const { gw, base } = await startConsoleGateway(t)
    const session = await signIn(base)
    const controller = new AbortController()
    // A guard, not an assertion: a missing event fails the test instead of hanging it.
    const guard = setTimeout(() => { controller.abort() }, 20_000)
    t.after(() => { clearTimeout(guard); controller.abort() })
    const res = await fetch(`${base}/admin/events`, { headers: { cookie: session.cookie }, signal: controller.signal })
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/)
    assert.match(res.headers.get('content-security-policy') ?? '', /^default-src 'none'/)
    assert.equal(res.headers.get('cache-control'), 'no-store')
    let called = false
    const events = await readNamedEvents(res, (seen) => {
      if (!called && seen.some(e => e.event === 'status')) {
        called = true
        // A real call through the MCP listener, once the stream is known to be open.
        connectClient(t, gw.url)
          .then(async (client) => await client.callTool({ name: 'web__echo', arguments: { text: 'hi' } }))
          .catch(() => { controller.abort() })
      }
      return seen.some(e => e.event === 'call')
    })
    const status = JSON.parse(events.find(e => e.event === 'status')?.data ?? '{}') as Status
    assert.deepEqual(status.upstreams.map(u => [u.name, u.state]), [['web', 'ready']])
    assert.equal(status.pendingApprovals, 0)
    assert.equal(typeof status.sessions.total, 'number')
    assert.ok('stats' in status)
    const call = JSON.parse(events.find(e => e.event === 'call')?.data ?? '{}') as Call
    assert.equal(call.tool, 'web__echo')
    assert.equal(call.upstream, 'web')
    assert.equal(call.outcome, 'ok')
    assert.equal(typeof call.durationMs, 'number')
    assert.ok(!JSON.stringify(call).includes('hi"'), 'no arguments in the event')
  })

  it('opens at most 16 streams at once: the 17th gets 429, and a closed one frees its place', async (t) => {
    const { base } = await startConsoleGateway(t)
    const controllers: AbortController[] = []
    t.after(() => { for (const c of controllers) c.abort() })
    const open = async (): Promise<Response> => {
      const controller = new AbortController()
      controllers.push(controller)
      return await fetch(`${base}/admin/events`, { headers: BEARER, signal: controller.signal })
    }
    for (let i = 0; i < 16; i++) assert.equal((await open()).status, 200, `stream ${i + 1}`)
    const metrics = async (): Promise<string> => await (await fetch(`${base}/metrics`, { headers: BEARER })).text()
    assert.equal(metricValue(await metrics(), 'switchboard_console_event_streams'), 16)
    const refused = await open()
    assert.equal(refused.status, 429)
    assert.equal((await refused.json() as { error: string }).error, 'too_many_streams')
    controllers[0]?.abort()
    await waitFor(async () => metricValue(await metrics(), 'switchboard_console_event_streams') === 15, 'the closed stream to be counted out')
    assert.equal((await open()).status, 200)
  })

  it('a reader that does not read misses call events past 1 MB buffered; memory stays bounded and the drops are counted', async (t) => {
    const { gw, port } = await startConsoleGateway(t)
    // A raw socket that sends the request and never reads the answer.
    // The call statistics listen too: the stream is one listener more.
    const others = gw.gateway.calls.listening
    const socket = createConnection({ host: '127.0.0.1', port })
    t.after(() => { socket.destroy() })
    socket.pause()
    await new Promise<void>((resolve) => { socket.once('connect', resolve) })
    socket.write(`GET /admin/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n\r\n`)
    await waitFor(() => gw.gateway.calls.listening > others, 'the stream to subscribe')
    const big = 'x'.repeat(64 * 1024)
    // 64 MB of call events, far more than any socket buffer takes.
    for (let i = 0; i < 1024; i++) {
      gw.gateway.calls.publish({ callId: String(i), at: Date.now(), principal: 'p', endpoint: undefined, tool: big, upstream: 'web', outcome: 'ok', durationMs: 1 })
    }
    socket.destroy()
    const line = await waitFor(() => gw.logs.find(l => l.msg === 'admin events: call events dropped for a slow reader'), 'the drops to be logged')
    assert.ok(typeof line.dropped === 'number' && line.dropped >= 512, `dropped ${String(line.dropped)}`)
    await waitFor(() => gw.gateway.calls.listening === others, 'the stream to unsubscribe')
  })
})
