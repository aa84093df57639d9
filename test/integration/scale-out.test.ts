import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { haproxyOrSkip, SERVED_BY_HEADER, startHaproxy, type Haproxy } from '../helpers/haproxy.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { startReplicaAt, startReplicas, type Replica } from '../helpers/replicas.ts'
import { waitFor } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, { code?: string }> }

const KEY = 'alice-key-0123456789abcdef'

interface Cluster { balancer: Haproxy, replicas: Replica[], config: Record<string, unknown> }

/** Three gateway processes on one Redis behind HAProxy round robin, in front of one shared HTTP upstream. */
async function cluster (t: TestContext, extra: Record<string, unknown> = {}): Promise<Cluster | undefined> {
  if (!redisOrSkip(t) || !haproxyOrSkip(t)) return undefined
  const redis = await startRedisServer(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const config = {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    redis: { url: redis.url },
    sessions: { store: 'redis' },
    logLevel: 'info',
    ...extra
  }
  const replicas = await startReplicas(t, 3, config)
  const balancer = await startHaproxy(t, replicas.map(r => ({ name: r.name, port: r.port })))
  await waitFor(async () => Object.values(await balancer.serverStates()).filter(s => s === 'UP').length === 3, 'every replica UP in HAProxy', 15_000)
  return { balancer, replicas, config }
}

/** The official SDK client through the balancer; records which replica served each HTTP request (and each GET stream). */
async function clientThrough (t: TestContext, balancer: Haproxy): Promise<{ client: Client, servedBy: string[], streamsOn: string[] }> {
  const servedBy: string[] = []
  const streamsOn: string[] = []
  const recording: typeof fetch = async (input, init) => {
    const res = await fetch(input, init)
    const by = res.headers.get(SERVED_BY_HEADER) ?? '?'
    servedBy.push(by)
    if ((init?.method ?? 'GET') === 'GET' && res.status === 200) streamsOn.push(by)
    return res
  }
  const client = new Client({ name: 'through-haproxy', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', balancer.url), { fetch: recording, requestInit: { headers: { authorization: `Bearer ${KEY}` } } }))
  t.after(async () => { await client.close().catch(() => {}) })
  return { client, servedBy, streamsOn }
}

async function echo (client: Client, text: string): Promise<void> {
  const result = await client.callTool({ name: 'web__echo', arguments: { text } }) as ToolResult
  assert.equal(result.content[0]?.text, text, JSON.stringify(result))
}

test('three replicas behind HAProxy round robin: one session\'s pages and 30 calls are served by all of them, one rate-limit budget', { timeout: 90_000 }, async (t) => {
  const ready = await cluster(t, { rateLimits: { store: 'redis', rules: [{ principals: ['*'], tools: ['web__add'], key: 'principal', limit: 3, windowMs: 60_000 }] }, catalog: { pageSize: 5 } })
  if (ready === undefined) return
  const { client, servedBy } = await clientThrough(t, ready.balancer)
  const names: string[] = []
  let cursor: string | undefined
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor })
    names.push(...page.tools.map(tool => tool.name))
    cursor = page.nextCursor
  } while (cursor !== undefined)
  assert.ok(names.length > 5 && names.includes('web__echo'), `every page, whichever replica served it: ${names.length} tools`)
  for (let i = 0; i < 30; i++) await echo(client, `call ${i}`)
  const byReplica = new Map<string, number>()
  for (const by of servedBy) byReplica.set(by, (byReplica.get(by) ?? 0) + 1)
  assert.deepEqual([...byReplica.keys()].filter(k => k !== '?').sort(), ['r0', 'r1', 'r2'], `served by ${JSON.stringify([...byReplica])}`)
  const outcomes: boolean[] = []
  for (let i = 0; i < 5; i++) outcomes.push(((await client.callTool({ name: 'web__add', arguments: { a: 1, b: 2 } })) as ToolResult).isError !== true)
  assert.deepEqual(outcomes, [true, true, true, false, false], 'three calls in the whole cluster, not three per replica')
})

test('a rolling restart (SIGTERM with a drain delay, start again) fails no call of a session that keeps working', { timeout: 120_000 }, async (t) => {
  const ready = await cluster(t, { shutdown: { drainDelayMs: 1000, graceMs: 5000 } })
  if (ready === undefined) return
  const { client } = await clientThrough(t, ready.balancer)
  await echo(client, 'before')
  for (const replica of ready.replicas.slice(0, 2)) {
    replica.kill('SIGTERM')
    let n = 0
    const stopped = replica.exited.then(code => code)
    const state = { done: false }
    void stopped.finally(() => { state.done = true })
    while (!state.done && n < 500) await echo(client, `${replica.name} draining ${n++}`)
    assert.equal(await stopped, 0, `${replica.name} exited cleanly`)
    const again = await startReplicaAt(t, replica.name, replica.port, ready.config)
    await waitFor(async () => (await ready.balancer.serverStates())[again.name] === 'UP', `${again.name} back in HAProxy`, 15_000)
    for (let i = 0; i < 6; i++) await echo(client, `${replica.name} back ${i}`)
  }
})

test('SIGKILL of the replica holding the GET stream: the session goes on through the others and its stream comes back elsewhere', { timeout: 90_000 }, async (t) => {
  const ready = await cluster(t, { catalog: { listChangedDebounceMs: 20 } })
  if (ready === undefined) return
  const { client, streamsOn } = await clientThrough(t, ready.balancer)
  let changes = 0
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes++ })
  for (let i = 0; i < 3; i++) await echo(client, `before ${i}`)
  const holder = await waitFor(() => streamsOn[0], 'the client\'s GET stream to open')
  const victim = ready.replicas.find(r => r.name === holder) as Replica
  victim.kill('SIGKILL')
  assert.equal(await victim.exited, 'SIGKILL')
  await waitFor(async () => (await ready.balancer.serverStates())[victim.name]?.startsWith('DOWN') === true, 'HAProxy to see the replica gone', 15_000)
  for (let i = 0; i < 9; i++) await echo(client, `after ${i}`)
  await waitFor(() => streamsOn.length >= 2, 'the GET stream to reconnect', 20_000)
  assert.notEqual(streamsOn.at(-1), victim.name)
  await client.callTool({ name: 'web__add_tool', arguments: { name: 'after_kill' } })
  await waitFor(() => changes >= 1, 'tools/list_changed on the stream that came back', 15_000)
})

test('a list change of a shared upstream, heard by every replica, reaches the session once, on its GET stream', { timeout: 90_000 }, async (t) => {
  const ready = await cluster(t, { catalog: { listChangedDebounceMs: 20 } })
  if (ready === undefined) return
  const { client } = await clientThrough(t, ready.balancer)
  let changes = 0
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes++ })
  // Should the change come before the GET stream opens, the replica that then gets it sends what is owed.
  await waitFor(async () => {
    const logs = ready.replicas.flatMap(r => r.logs)
    return logs.some(l => l.msg === 'session adopted from the shared store' || l.msg === 'session opened')
  }, 'the session to be known')
  await client.callTool({ name: 'web__add_tool', arguments: { name: 'fresh' } })
  await waitFor(() => changes >= 1, 'tools/list_changed', 15_000)
  // A second copy from another replica would arrive within these round trips.
  for (let i = 0; i < 6; i++) await client.listTools()
  assert.equal(changes, 1)
  assert.ok((await client.listTools()).tools.some(tool => tool.name === 'web__fresh'))
})
