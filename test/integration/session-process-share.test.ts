import { after, test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { Client } from '@modelcontextprotocol/client'
import { REPO_ROOT } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, type RunningGateway } from '../helpers/start-gateway.ts'

// One principal cannot starve the others of processes: with two API-key principals in front of real
// stdio servers, a session-isolated upstream gives one principal at most its share of processes
// (limits.sessionConnectionsPerPrincipal), sessions' processes count toward maxRunning, and the
// lazy upstreams keep a slot. A session refused a process is told so at once, naming the cap.

const HUNGRY = path.join(REPO_ROOT, 'test', 'fixtures', 'hungry-server.ts')
const TSX = import.meta.resolve('tsx')
const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
/** Well under the calls' 30 s timeout: a refusal that waited for a slot would take that long. */
const AT_ONCE_MS = 5_000

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, unknown> }

const dirs: string[] = []
after(async () => { await Promise.all(dirs.map(async dir => { await rm(dir, { recursive: true, force: true }) })) })

function upstream (name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name, transport: 'stdio', command: process.execPath, args: ['--import', TSX, HUNGRY, '--name', name], timeoutMs: 30_000, ...extra }
}

async function gateway (t: TestContext, extra: Record<string, unknown>): Promise<RunningGateway> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sb-session-share-'))
  dirs.push(dir)
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [upstream('iso', { isolation: 'session' }), upstream('lazy')],
    upstreamDefaults: { start: 'lazy' },
    auth: { apiKeys: [{ id: 'alice', key: KEYS.alice }, { id: 'bob', key: KEYS.bob }] },
    pinning: { file: path.join(dir, 'gw.pins.json') },
    ...extra
  }))
  // Each lazy upstream is started once to learn its catalog, then stopped: no process runs.
  await waitFor(() => gw.gateway.catalogs.tools.size === 8 && gw.gateway.pool.status().every(s => s.state === 'stopped') ? true : undefined, 'both catalogs learned and their processes stopped', 60_000)
  return gw
}

async function as (t: TestContext, gw: RunningGateway, who: keyof typeof KEYS): Promise<Client> {
  return await connectClient(t, gw.url, {}, { authorization: `Bearer ${KEYS[who]}` })
}

async function call (client: Client, name: string): Promise<{ result: ToolResult, ms: number }> {
  const started = Date.now()
  const result = await client.callTool({ name, arguments: {} }) as ToolResult
  return { result, ms: Date.now() - started }
}

function sessionProcesses (gw: RunningGateway): number {
  return gw.gateway.pool.status().find(s => s.name === 'iso')?.sessionConnections ?? 0
}

function assertRefusedAtOnce (refused: { result: ToolResult, ms: number }, cap: RegExp): void {
  assert.equal(refused.result.isError, true, JSON.stringify(refused.result))
  assert.ok(refused.ms < AT_ONCE_MS, `refused at once, not after waiting for a slot (took ${refused.ms} ms)`)
  assert.equal((refused.result._meta?.['switchboard/error'] as { code?: string } | undefined)?.code, 'SB_ERR_SESSION_LIMIT')
  assert.match(refused.result.content[0]?.text ?? '', cap)
}

test('limits.sessionConnectionsPerPrincipal: a principal\'s session past its share is refused its own process at once, naming the cap; another principal still gets the session upstream and a lazy one', { timeout: 120_000 }, async (t) => {
  const gw = await gateway(t, { limits: { sessionConnectionsPerPrincipal: 2 } })
  const alice = [await as(t, gw, 'alice'), await as(t, gw, 'alice'), await as(t, gw, 'alice')]
  for (const [i, client] of alice.slice(0, 2).entries()) assert.equal((await call(client, 'iso__whoami')).result.content[0]?.text, 'iso', `alice's session ${i + 1} has its process`)
  const refused = await call(alice[2] as Client, 'iso__whoami')
  assertRefusedAtOnce(refused, /"iso".*limits\.sessionConnectionsPerPrincipal: 2/)
  assert.equal(sessionProcesses(gw), 2, 'no process was started for the refused session')

  const bob = await as(t, gw, 'bob')
  assert.equal((await call(bob, 'iso__whoami')).result.content[0]?.text, 'iso', 'bob has his own share')
  assert.equal((await call(bob, 'lazy__whoami')).result.content[0]?.text, 'lazy', 'the lazy upstream starts for bob')
  assert.equal(sessionProcesses(gw), 3)

  // One of alice's sessions ends: its slot is hers again.
  await (alice[0]?.transport as { terminateSession?: () => Promise<void> } | undefined)?.terminateSession?.()
  await waitFor(() => sessionProcesses(gw) === 2 || undefined, 'alice\'s first session to release its process')
  assert.equal((await call(alice[2] as Client, 'iso__whoami')).result.content[0]?.text, 'iso')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_limit_refusals_total', { limit: 'sessionConnectionsPerPrincipal' }), 1)
})

test('upstreamDefaults.maxRunning counts sessions\' processes and keeps a slot for the lazy upstreams: with maxRunning 2 a lazy upstream still starts while alice holds all sessions may take', { timeout: 120_000 }, async (t) => {
  const gw = await gateway(t, { upstreamDefaults: { start: 'lazy', maxRunning: 2 } })
  const alice = [await as(t, gw, 'alice'), await as(t, gw, 'alice')]
  assert.equal((await call(alice[0] as Client, 'iso__whoami')).result.content[0]?.text, 'iso')
  const refused = await call(alice[1] as Client, 'iso__whoami')
  assertRefusedAtOnce(refused, /"iso".*upstreamDefaults\.maxRunning: 2/)
  assert.equal(sessionProcesses(gw), 1)

  const bob = await as(t, gw, 'bob')
  const lazy = await call(bob, 'lazy__whoami')
  assert.equal(lazy.result.content[0]?.text, 'lazy', 'the slot kept for the shared upstreams starts it')
  assert.ok(gw.gateway.pool.running + sessionProcesses(gw) <= 2, 'never more than maxRunning processes')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_limit_refusals_total', { limit: 'maxRunning' }), 1)
})
