import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { REPO_ROOT, fixtureCommand } from '../helpers/spawn-fixture.ts'
import { rawInitialize, startGateway, waitFor } from '../helpers/start-gateway.ts'
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
  const inFlight = client.callTool({ name: 'a__slow', arguments: { ms: 600, steps: 2 } })
  await new Promise(resolve => setTimeout(resolve, 100))
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
