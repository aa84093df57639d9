import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import path from 'node:path'
import { pino } from 'pino'
import { RpcPeer } from '../../src/upstream/rpc-peer.ts'
import { StdioTransport } from '../../src/upstream/stdio-transport.ts'
import { REPO_ROOT, fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import { tempConfig } from '../helpers/cli.ts'
import { isAlive } from '../helpers/process-alive.ts'

const HARDSHIP = path.join(REPO_ROOT, 'test', 'fixtures', 'hardship-server.ts')
const TSX_LOADER_URL = import.meta.resolve('tsx')
const MB = 1024 * 1024

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

function hardship (...flags: string[]): { command: string, args: string[] } {
  return { command: process.execPath, args: ['--import', TSX_LOADER_URL, HARDSHIP, ...flags] }
}

async function openPeer (t: { after: (fn: () => Promise<void>) => void }): Promise<RpcPeer> {
  const { command, args } = hardship()
  const peer = new RpcPeer(new StdioTransport({ command, args, env: {}, killAfterMs: 1000, log: pino({ level: 'silent' }), baseEnv: process.env }))
  t.after(async () => { await peer.close() })
  await peer.start()
  await peer.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } })
  await peer.notify('notifications/initialized')
  return peer
}

/**
 * CPU milliseconds this process spends receiving a `bytes`-long answer written in 64 KiB pieces;
 * the best of two runs. CPU time rather than wall time: the server writing it is another process,
 * and a loaded machine stretches wall time far more than the work done here.
 */
async function timeBig (peer: RpcPeer, bytes: number): Promise<number> {
  let best = Infinity
  for (let run = 0; run < 2; run++) {
    const started = process.cpuUsage()
    const result = await peer.request('tools/call', { name: 'big', arguments: { bytes, drip: true } }, { timeoutMs: 60_000 }) as unknown as ToolResult
    const used = process.cpuUsage(started)
    best = Math.min(best, (used.user + used.system) / 1000)
    assert.equal(result.content[0]?.text?.length, bytes, 'the whole answer arrived')
  }
  return best
}

test('the time to read a large stdio answer grows linearly with its size, not quadratically', { timeout: 120_000 }, async (t) => {
  const peer = await openPeer(t)
  await timeBig(peer, 1 * MB) // warm-up: JIT, pipe buffers
  const small = await timeBig(peer, 6 * MB)
  const large = await timeBig(peer, 24 * MB)
  // 4× the size: linear reading costs about 4× the time; rescanning the buffer per chunk cost 16× and more.
  t.diagnostic(`CPU to receive 6 MB: ${small.toFixed(0)} ms, 24 MB: ${large.toFixed(0)} ms`)
  assert.ok(large / small < 9, `24 MB took ${large.toFixed(0)} ms of CPU, 6 MB ${small.toFixed(0)} ms: a ratio of ${(large / small).toFixed(1)} for 4× the size`)
})

test('a 30 MB result passes through the gateway intact while another session keeps being served', { timeout: 120_000 }, async (t) => {
  const heavy = hardship()
  const light = fixtureCommand(['--name', 'light'])
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [
      { name: 'heavy', transport: 'stdio', command: heavy.command, args: heavy.args, timeoutMs: 60_000 },
      { name: 'light', transport: 'stdio', command: light.command, args: light.args }
    ],
    http: { maxBodyBytes: 64 * MB }
  }))
  await waitReady(gw)
  const big = await connectClient(t, gw.url)
  const other = await connectClient(t, gw.url)
  const state = { done: false }
  const pending = big.callTool({ name: 'heavy__big', arguments: { bytes: 30 * MB, drip: true } }, { timeout: 60_000 })
    .finally(() => { state.done = true })
  let servedMeanwhile = 0
  while (!state.done && servedMeanwhile < 1000) {
    const echo = await other.callTool({ name: 'light__echo', arguments: { text: 'meanwhile' } }) as ToolResult
    assert.equal(echo.content[0]?.text, 'meanwhile')
    if (!state.done) servedMeanwhile++
  }
  const result = await pending as ToolResult
  assert.equal(result.content[0]?.text?.length, 30 * MB)
  assert.ok(servedMeanwhile >= 3, `the other session was served ${servedMeanwhile} time(s) while 30 MB passed`)
})

test('a crashed stdio server takes its whole process group down, even a grandchild that ignores SIGTERM', { timeout: 60_000 }, async (t) => {
  const { command, args } = hardship()
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'frail', transport: 'stdio', command, args }],
    shutdown: { killAfterMs: 500 }
  }))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const spawned = await client.callTool({ name: 'frail__spawn_grandchild', arguments: {} }) as ToolResult
  const grandchild = Number(spawned.content[0]?.text)
  t.after(() => { try { process.kill(grandchild, 'SIGKILL') } catch { /* gone, as it should be */ } })
  assert.ok(isAlive(grandchild))
  await client.callTool({ name: 'frail__crash', arguments: {} })
  await waitFor(() => !isAlive(grandchild), 'the grandchild to be killed after the crash', 10_000)
  await waitFor(() => gw.gateway.pool.get('frail')?.state === 'ready', 'the server to be restarted', 20_000)
  const again = await client.callTool({ name: 'frail__spawn_grandchild', arguments: {} }) as ToolResult
  const second = Number(again.content[0]?.text)
  t.after(() => { try { process.kill(second, 'SIGKILL') } catch { /* gone */ } })
  await gw.close()
  // SIGKILL was sent before close returned; the process table may take a moment to reap it.
  await waitFor(() => !isAlive(second), 'the grandchild to be gone once the gateway closed', 5_000)
})

test('SIGTERM shuts the gateway down in order: children that ignore stdin closing and SIGTERM are gone, exit 0', { timeout: 60_000 }, async (t) => {
  const { command, args } = hardship('--linger', '--ignore-sigterm')
  const file = await tempConfig(t, JSON.stringify({
    listen: { host: '127.0.0.1', port: 0 },
    upstreams: [{ name: 'stubborn', transport: 'stdio', command, args }],
    shutdown: { graceMs: 1000, killAfterMs: 300 }
  }))
  const gateway = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--config', file], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => { if (gateway.exitCode === null) gateway.kill('SIGKILL') })
  const exited = new Promise<number | null>(resolve => gateway.once('exit', code => { resolve(code) }))
  let out = ''
  gateway.stdout.setEncoding('utf8').on('data', (chunk: string) => { out += chunk })
  const url = await waitFor(() => /"url":"(http:[^"]+)"/.exec(out)?.[1], 'the gateway to listen', 20_000)
  await waitFor(async () => (await fetch(new URL('/readyz', url))).status === 200, 'readiness', 20_000)
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client')
  const client = new Client({ name: 'sigterm-test', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  const server = Number(((await client.callTool({ name: 'stubborn__pid', arguments: {} })) as ToolResult).content[0]?.text)
  const grandchild = Number(((await client.callTool({ name: 'stubborn__spawn_grandchild', arguments: {} })) as ToolResult).content[0]?.text)
  t.after(() => { for (const pid of [server, grandchild]) try { process.kill(pid, 'SIGKILL') } catch { /* gone */ } })
  await client.close().catch(() => {})
  gateway.kill('SIGTERM')
  assert.equal(await exited, 0, 'an orderly exit, not death by signal')
  assert.match(out, /"signal":"SIGTERM"/)
  assert.match(out, /"msg":"stopped"/)
  assert.equal(isAlive(server), false, 'the server that ignores stdin closing and SIGTERM is gone')
  assert.equal(isAlive(grandchild), false, 'its grandchild is gone')
})
