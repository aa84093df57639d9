import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { DRAINING_RETRY_AFTER_S } from '../../src/http/mcp-routes.ts'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { REPO_ROOT, fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, rawInitialize, rawPost, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import { isAlive } from '../helpers/process-alive.ts'

/** The upstream fixtures the gateway started (tsx may run an esbuild helper beside them). */
function upstreamChildrenOf (pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' }).split('\n')
      .filter(line => line.includes('controllable-server'))
      .map(line => Number.parseInt(line.trim(), 10))
      .filter(n => n > 0)
  } catch {
    return []
  }
}

test('SIGTERM lets the call in flight finish, closes every upstream, leaves no child process and exits 0', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'switchboard-shutdown-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const a = fixtureCommand(['--name', 'a'])
  const b = fixtureCommand(['--name', 'b'])
  const file = path.join(dir, 'gateway.yaml')
  writeFileSync(file, JSON.stringify({
    listen: { host: '127.0.0.1', port: 0 },
    logLevel: 'info',
    upstreams: [
      { name: 'a', transport: 'stdio', command: a.command, args: a.args },
      { name: 'b', transport: 'stdio', command: b.command, args: b.args }
    ],
    shutdown: { graceMs: 5000, killAfterMs: 1000 }
  }))
  const gateway = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--config', file], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => { if (gateway.exitCode === null) gateway.kill('SIGKILL') })
  const exited = new Promise<number | null>(resolve => gateway.once('exit', code => { resolve(code) }))
  let out = ''
  gateway.stdout.setEncoding('utf8')
  gateway.stdout.on('data', (chunk: string) => { out += chunk })
  const url = await waitFor(() => /"url":"(http:[^"]+)"/.exec(out)?.[1], 'the gateway to listen', 20_000)
  await waitFor(async () => (await fetch(new URL('/readyz', url))).status === 200, 'readiness', 20_000)
  const upstreamPids = upstreamChildrenOf(gateway.pid ?? -1)
  assert.equal(upstreamPids.length, 2, 'one child per stdio upstream')

  const client = new Client({ name: 'shutdown-test', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  let progressed!: () => void
  const firstStep = new Promise<void>(resolve => { progressed = resolve })
  const inFlight = client.callTool({ name: 'a__slow', arguments: { ms: 600, steps: 2 } }, { onprogress: () => { progressed() } })
  await firstStep // the upstream is half way through the call
  gateway.kill('SIGTERM')
  const result = await inFlight as { content: Array<{ text: string }> }
  assert.equal(result.content[0]?.text, 'done', 'the call in flight finished during the grace period')
  assert.equal(await exited, 0)
  await waitFor(() => upstreamPids.every(pid => !isAlive(pid)), 'every upstream process to be gone', 5000)
  assert.match(out, /"msg":"stopped"/)
  await client.close().catch(() => {})
})

test('shutdown() with a drain delay turns /readyz 503 at once, keeps serving (new sessions too) for the delay, then closes', async (t) => {
  const gw = await startGateway(t, 'upstreams: []\nshutdown: { drainDelayMs: 400 }\n')
  await waitFor(async () => (await fetch(new URL('/readyz', gw.baseUrl))).status === 200, 'readiness')
  const started = Date.now()
  const closed = gw.shutdown()
  const ready = await fetch(new URL('/readyz', gw.baseUrl))
  assert.equal(ready.status, 503)
  assert.deepEqual(await ready.json(), { status: 'draining' })
  assert.equal((await fetch(new URL('/healthz', gw.baseUrl))).status, 200, 'liveness is untouched')
  const { sessionId } = await rawInitialize(gw.url)
  assert.ok(sessionId.length > 0, 'a new session is still opened during the delay')
  assert.equal(gw.gateway.stopping, false)
  await closed
  assert.ok(Date.now() - started >= 390, `closed after the delay, not before (${Date.now() - started} ms)`)
  assert.equal(gw.gateway.stopping, true)
  await assert.rejects(fetch(new URL('/healthz', gw.baseUrl)), 'the listener is closed')
  assert.ok(gw.logs.some(l => l.msg.startsWith('draining:') && l.drainDelayMs === 400))
})

test('without a drain delay shutdown() closes at once, as app.close() does', async (t) => {
  const gw = await startGateway(t, 'upstreams: []\n')
  const started = Date.now()
  await gw.shutdown()
  assert.ok(Date.now() - started < 300, `no delay (${Date.now() - started} ms)`)
  assert.equal(gw.gateway.draining, true)
  await assert.rejects(fetch(new URL('/healthz', gw.baseUrl)))
})

/** GET /mcp asking for a WebSocket: the status of the answer (101 when upgraded). */
async function upgradeStatus (url: string): Promise<{ status: number, body: string, headers: IncomingHttpHeaders }> {
  return await new Promise((resolve, reject) => {
    const request = httpRequest(url, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'mcp' } })
    request.on('upgrade', (response, socket) => { socket.destroy(); resolve({ status: response.statusCode ?? 0, body: '', headers: response.headers }) })
    request.on('response', (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { body += chunk })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body, headers: response.headers }) })
    })
    request.on('error', reject)
    request.end()
  })
}

test('while closing, /healthz stays 200 and every MCP endpoint answers 503 with a JSON-RPC error and Retry-After', async (t) => {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }], shutdown: { graceMs: 5000 } }))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const inFlight = client.callTool({ name: 'web__slow', arguments: { ms: 1500 } })
  await waitFor(() => gw.gateway.sessions.inFlightCount() > 0, 'the call to be in flight')
  const closed = gw.close()
  await waitFor(() => gw.gateway.stopping, 'the gateway to start closing')

  assert.equal((await fetch(new URL('/healthz', gw.baseUrl))).status, 200, 'alive while it finishes its calls')
  assert.equal((await fetch(new URL('/readyz', gw.baseUrl))).status, 503)
  const probes: Array<[string, Promise<Response>]> = [
    ['POST /mcp', rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })],
    ['GET /mcp', fetch(gw.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': 'x' } })],
    ['DELETE /mcp', fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': 'x' } })],
    ['GET /sse', fetch(new URL('/sse', gw.baseUrl), { headers: { accept: 'text/event-stream' } })],
    ['POST /messages', rawPost(new URL('/messages?sessionId=x', gw.baseUrl).href, { jsonrpc: '2.0', id: 1, method: 'ping' })]
  ]
  for (const [what, probe] of probes) {
    const res = await probe
    assert.equal(res.status, 503, what)
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/, what)
    assert.equal(res.headers.get('retry-after'), String(DRAINING_RETRY_AFTER_S), what)
    const body = await res.json() as { jsonrpc: string, id: null, error: { code: number, message: string } }
    assert.equal(body.jsonrpc, '2.0', what)
    assert.equal(body.id, null, what)
    assert.equal(body.error.code, -32000, what)
    assert.match(body.error.message, /shutting down/, what)
  }
  const ws = await upgradeStatus(gw.url)
  assert.equal(ws.status, 503, 'a WebSocket upgrade is refused the same way')
  assert.equal(ws.headers['retry-after'], String(DRAINING_RETRY_AFTER_S))
  assert.equal((JSON.parse(ws.body) as { error: { code: number } }).error.code, -32000)

  const result = await inFlight as { content: Array<{ text: string }> }
  assert.equal(result.content[0]?.text, 'done', 'the call in flight still finished')
  await closed
  await assert.rejects(fetch(new URL('/healthz', gw.baseUrl)), 'once the listener is closed there is nothing to answer')
})
