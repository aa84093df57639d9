import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { descendants } from '../helpers/descendants.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { REPO_ROOT } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'
import type { UpstreamConnection } from '../../src/upstream/upstream-connection.ts'

// Process economy with real stdio servers: lazy start from the listing last seen, idle stop and a
// transparent restart, a resource limit that stops a server, and maxRunning.

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, unknown> }

const HUNGRY = path.join(REPO_ROOT, 'test', 'fixtures', 'hungry-server.ts')
const TSX = import.meta.resolve('tsx')

const dirs: string[] = []
// Removed once every test's gateway has closed (a gateway writes its listings until it closes).
after(async () => { await Promise.all(dirs.map(async dir => { await rm(dir, { recursive: true, force: true }) })) })

async function tempDir (): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sb-processes-'))
  dirs.push(dir)
  return dir
}

function upstream (name: string, extra: Record<string, unknown> = {}, starts?: string): Record<string, unknown> {
  const args = ['--import', TSX, HUNGRY, '--name', name, ...(starts === undefined ? [] : ['--starts', starts])]
  return { name, transport: 'stdio', command: process.execPath, args, ...extra }
}

/** The fixture processes running now as our descendants (the gateway runs in this process), by name. */
function running (): string[] {
  return descendants(process.pid).filter(p => p.args.includes(HUNGRY)).map(p => p.args[p.args.indexOf('--name') + 1] ?? '?').sort()
}

function errorOf (result: ToolResult): Record<string, unknown> | undefined {
  return result._meta?.['switchboard/error'] as Record<string, unknown> | undefined
}

function states (gw: RunningGateway): Record<string, string> {
  return Object.fromEntries(gw.gateway.pool.status().map(s => [s.name, s.state]))
}

/** The largest number of stdio upstreams running at once, read at every change of state of any of them. */
function watchRunning (gw: RunningGateway, connections: UpstreamConnection[]): { max: number } {
  const seen = { max: gw.gateway.pool.running }
  const follow = (c: UpstreamConnection): void => {
    c.onNextState(() => {
      seen.max = Math.max(seen.max, gw.gateway.pool.running)
      follow(c)
    })
  }
  for (const c of connections) follow(c)
  return seen
}

test('ten lazy upstreams are listed before any runs, from the listing kept beside the pins; the first call starts exactly one', async (t) => {
  const dir = await tempDir()
  const names = Array.from({ length: 10 }, (_, i) => `lazy${i}`)
  const config = JSON.stringify({ upstreams: names.map(n => upstream(n)), upstreamDefaults: { start: 'lazy' }, pinning: { file: path.join(dir, 'gw.pins.json') } })

  // Never seen: each is started once to learn its catalog, then stopped.
  const first = await startGateway(t, config)
  await waitFor(() => first.gateway.catalogs.tools.size === 40 && Object.values(states(first)).every(s => s === 'stopped') && running().length === 0 ? true : undefined, 'every lazy upstream learned and stopped', 60_000)
  await first.close()
  const kept = JSON.parse(await readFile(path.join(dir, 'gw.listings.json'), 'utf8')) as { upstreams: Record<string, { tools: unknown[] }> }
  assert.deepEqual(Object.keys(kept.upstreams).sort(), names)

  const gw = await startGateway(t, config)
  await waitReady(gw)
  await waitFor(() => gw.gateway.catalogs.tools.size === 40 || undefined, 'the remembered listings in the catalog')
  assert.deepEqual(new Set(Object.values(states(gw))), new Set(['stopped']))
  assert.deepEqual(running(), [], 'no server runs')
  const client = await connectClient(t, gw.url)
  const tools = (await client.listTools()).tools.map(x => x.name)
  assert.equal(tools.length, 40)
  assert.ok(tools.includes('lazy7__echo'))
  let metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_processes', { state: 'stopped' }), 10)
  assert.equal(metricValue(metrics, 'switchboard_upstream_up', { upstream: 'lazy7' }), 1, 'stopped on purpose is not down')

  const answer = await client.callTool({ name: 'lazy7__echo', arguments: { id: 'first' } }) as ToolResult
  assert.equal(answer.content[0]?.text, 'first')
  assert.deepEqual(running(), ['lazy7'])
  metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_spawns_total', { upstream: 'lazy7', reason: 'first_call' }), 1)
  const spawns = metrics.split('\n').filter(l => l.startsWith('switchboard_upstream_spawns_total{')).map(l => Number(l.split(' ').pop()))
  assert.equal(spawns.reduce((a, b) => a + b, 0), 1, 'exactly one start')
  assert.equal(metricValue(metrics, 'switchboard_upstream_processes', { state: 'running' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_upstream_lazy_start_seconds_count'), 1)
})

test('with the pins in Redis the listing is kept there: another gateway lists the lazy upstream without ever starting it', async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t)
  const config = JSON.stringify({ upstreams: [upstream('shared', { start: 'lazy' })], pinning: { store: 'redis', redisUrl: redis.url, keyPrefix: `pe${Date.now()}` } })
  const first = await startGateway(t, config)
  await waitFor(() => first.gateway.catalogs.tools.size === 4 && states(first).shared === 'stopped' && running().length === 0 ? true : undefined, 'the lazy upstream learned and stopped', 30_000)
  const second = await startGateway(t, config)
  await waitFor(() => second.gateway.catalogs.tools.size === 4 || undefined, 'the listing read from Redis')
  assert.equal(states(second).shared, 'stopped')
  assert.deepEqual(running(), [], 'neither gateway runs it')
  const client = await connectClient(t, second.url)
  assert.ok((await client.listTools()).tools.some(x => x.name === 'shared__whoami'))
  assert.equal((await client.callTool({ name: 'shared__whoami', arguments: {} }) as ToolResult).content[0]?.text, 'shared')
})

test('an idle upstream is stopped, shown stopped (not down), and twenty concurrent calls restart it once, each answered once', async (t) => {
  const dir = await tempDir()
  const starts = path.join(dir, 'starts')
  const token = 'metrics-token-0123456789'
  // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
  const gw = await startGateway(t, JSON.stringify({ upstreams: [upstream('idler', { idleStopMs: 300 }, starts)], metrics: { token: '${SB_TEST_METRICS_TOKEN}' } }), { ...process.env, SB_TEST_METRICS_TOKEN: token })
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  assert.equal((await client.callTool({ name: 'idler__whoami', arguments: {} }) as ToolResult).content[0]?.text, 'idler')
  await waitFor(() => states(gw).idler === 'stopped' || undefined, 'the idle stop')
  await waitFor(() => running().length === 0 || undefined, 'its process gone')
  const health = await (await fetch(`${gw.baseUrl}/healthz`, { headers: { authorization: `Bearer ${token}` } })).json() as { upstreams: Array<{ name: string, state: string }> }
  assert.equal(health.upstreams.find(u => u.name === 'idler')?.state, 'stopped')
  assert.equal((await fetch(`${gw.baseUrl}/readyz`)).status, 200, 'an idle-stopped upstream does not make the gateway unready')
  assert.deepEqual((await client.listTools()).tools.map(x => x.name).sort(), ['idler__allocate', 'idler__echo', 'idler__sleep', 'idler__whoami'], 'still listed while stopped')

  const ids = Array.from({ length: 20 }, (_, i) => `call-${i}`)
  const answers = await Promise.all(ids.map(async id => await client.callTool({ name: 'idler__echo', arguments: { id } }) as ToolResult))
  assert.deepEqual(answers.map(a => a.content[0]?.text), ids, 'every call answered, once, with its own answer')
  assert.equal((await readFile(starts, 'utf8')).trim().split('\n').length, 2, 'one start at the gateway\'s start, one restart')
  const scraped = await (await fetch(`${gw.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text()
  assert.equal(metricValue(scraped, 'switchboard_upstream_spawns_total', { upstream: 'idler', reason: 'restart' }), 1)
})

test('a server over its memory limit is stopped: the call gets SB_ERR_UPSTREAM_LIMIT, the server is restarted and counted, the gateway lives', async (t) => {
  const gw = await startGateway(t, JSON.stringify({ upstreams: [upstream('hog', { limits: { memoryMb: 128 } })] }))
  await waitReady(gw)
  const applied = gw.logs.find(l => l.msg === 'upstream process limits')
  assert.ok(applied !== undefined, 'the mechanism is logged at start')
  const client = await connectClient(t, gw.url)
  const killed = await client.callTool({ name: 'hog__allocate', arguments: { mb: 1024 } }) as ToolResult
  assert.equal(killed.isError, true)
  assert.equal(errorOf(killed)?.code, 'SB_ERR_UPSTREAM_LIMIT', JSON.stringify(killed))
  assert.match(killed.content[0]?.text ?? '', /resource limit \(memoryMb\)/)
  await waitFor(() => states(gw).hog === 'ready' || undefined, 'the restart', 20_000)
  assert.equal((await client.callTool({ name: 'hog__whoami', arguments: {} }) as ToolResult).content[0]?.text, 'hog')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_upstream_spawns_total', { upstream: 'hog', reason: 'limit' }), 1)
})

test('maxRunning: never more than two run; the least recently used idle one stops for a third; with none idle the call waits for one', async (t) => {
  const dir = await tempDir()
  const names = ['m1', 'm2', 'm3', 'm4']
  const gw = await startGateway(t, JSON.stringify({ upstreams: names.map(n => upstream(n)), upstreamDefaults: { start: 'lazy', maxRunning: 2 }, pinning: { file: path.join(dir, 'gw.pins.json') } }))
  const connections = names.map(n => gw.gateway.pool.get(n)).filter(c => c !== undefined)
  const seen = watchRunning(gw, connections)
  // Learning the four catalogs goes two at a time.
  await waitFor(() => gw.gateway.catalogs.tools.size === 16 && Object.values(states(gw)).every(s => s === 'stopped') ? true : undefined, 'four catalogs learned', 60_000)
  const client = await connectClient(t, gw.url)
  const call = async (tool: string, args: Record<string, unknown> = {}): Promise<string | undefined> => (await client.callTool({ name: tool, arguments: args }) as ToolResult).content[0]?.text
  assert.equal(await call('m1__whoami'), 'm1')
  assert.equal(await call('m2__whoami'), 'm2')
  assert.equal(await call('m3__whoami'), 'm3')
  assert.deepEqual(states(gw), { m1: 'stopped', m2: 'ready', m3: 'ready', m4: 'stopped' }, 'm1, used least recently, made room')
  const metrics = await scrapeMetrics(gw.baseUrl)
  for (const name of ['m1', 'm2', 'm3']) assert.equal(metricValue(metrics, 'switchboard_upstream_spawns_total', { upstream: name, reason: 'first_call' }), 1, `${name} started once for its call`)
  assert.equal(metricValue(metrics, 'switchboard_upstream_spawns_total', { reason: 'restart' }), undefined, 'no start was undone and redone')

  // Both running ones busy: the call to m4 waits until one of them is idle.
  const busy = [call('m2__sleep', { ms: 1500 }), call('m3__sleep', { ms: 1500 })]
  await waitFor(() => connections.filter(c => c.activeCalls.size > 0).length === 2 || undefined, 'two calls in flight')
  const waiting = call('m4__whoami')
  assert.deepEqual(await Promise.all(busy), ['slept', 'slept'])
  assert.equal(await waiting, 'm4')
  assert.ok(seen.max <= 2, `at most two ran at once (saw ${seen.max})`)
})
