import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer, type ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { TASKS_EXTENSION, startModernTasksServer } from '../fixtures/modern-tasks-server.ts'
import { haproxyOrSkip, SERVED_BY_HEADER, startHaproxy, type Haproxy } from '../helpers/haproxy.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { startReplicaAt, startReplicas, type Replica } from '../helpers/replicas.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { readEvents } from '../helpers/sse-events.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, waitFor } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, { code?: string }> }

const KEY = 'alice-key-0123456789abcdef'
const BOB_KEY = 'bob-key-0123456789abcdef01'

interface Cluster { balancer: Haproxy, replicas: Replica[], config: Record<string, unknown>, upstream: ControllableServerHandle }

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
  return { balancer, replicas, config, upstream }
}

/** The official SDK client through the balancer; records which replica served each HTTP request (and each GET stream). */
async function clientThrough (t: TestContext, balancer: Haproxy, capabilities: Record<string, unknown> = {}): Promise<{ client: Client, transport: StreamableHTTPClientTransport, servedBy: string[], streamsOn: string[] }> {
  const servedBy: string[] = []
  const streamsOn: string[] = []
  const recording: typeof fetch = async (input, init) => {
    const res = await fetch(input, init)
    const by = res.headers.get(SERVED_BY_HEADER) ?? '?'
    servedBy.push(by)
    if ((init?.method ?? 'GET') === 'GET' && res.status === 200) streamsOn.push(by)
    return res
  }
  const client = new Client({ name: 'through-haproxy', version: '1' }, { capabilities })
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', balancer.url), { fetch: recording, requestInit: { headers: { authorization: `Bearer ${KEY}` } } })
  await client.connect(transport)
  t.after(async () => { await client.close().catch(() => {}) })
  return { client, transport, servedBy, streamsOn }
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

/** The sum over every replica of one series of switchboard_cross_replica_messages_total. */
async function routed (replicas: Replica[], kind: string, outcome: string): Promise<number> {
  let n = 0
  for (const r of replicas) n += metricValue(await scrapeMetrics(r.baseUrl), 'switchboard_cross_replica_messages_total', { kind, outcome }) ?? 0
  return n
}

test('through HAProxy: progress, sampling and elicitation replies and a cancellation reach the replica running the call; another principal and a deleted session are refused by every replica', { timeout: 90_000 }, async (t) => {
  const ready = await cluster(t, { auth: { apiKeys: [{ id: 'alice', key: KEY }, { id: 'bob', key: BOB_KEY }] } })
  if (ready === undefined) return
  const { client, transport } = await clientThrough(t, ready.balancer, { sampling: {}, elicitation: { form: {} } })
  client.setRequestHandler('sampling/createMessage', () => ({ role: 'assistant', model: 'm', content: { type: 'text', text: 'sampled here' } }))
  client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { answer: 'yes' } }))
  const progress: number[] = []
  await client.callTool({ name: 'web__slow', arguments: { ms: 30, steps: 3 } }, { onprogress: p => { progress.push(p.progress) } })
  assert.deepEqual(progress, [1, 2, 3])
  // Round robin over three: each reply POST lands on another replica than its call's POST.
  for (let i = 0; i < 3; i++) {
    assert.equal(((await client.callTool({ name: 'web__ask', arguments: { prompt: 'p' } })) as ToolResult).content[0]?.text, 'sampled: sampled here')
    assert.equal(((await client.callTool({ name: 'web__elicit', arguments: {} })) as ToolResult).content[0]?.text, 'elicited: accept {"answer":"yes"}')
  }
  const published = await routed(ready.replicas, 'response', 'published')
  assert.ok(published >= 1, 'some replies landed on another replica')
  assert.equal(await routed(ready.replicas, 'response', 'delivered'), published, 'each one reached the replica that asked')

  const controller = new AbortController()
  const stalled = client.callTool({ name: 'web__stall', arguments: {} }, { signal: controller.signal })
  const calls = ready.upstream.state.stats.calls
  await waitFor(() => ready.upstream.state.stats.calls > calls || undefined, 'the stalled call to reach the upstream')
  const cancelled = ready.upstream.state.stats.cancelled
  controller.abort()
  await assert.rejects(stalled)
  await waitFor(() => ready.upstream.state.stats.cancelled > cancelled || undefined, 'the upstream to be told the call was cancelled, wherever the notice landed')

  const sessionId = transport.sessionId as string
  const headers = { authorization: `Bearer ${KEY}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  const list = { jsonrpc: '2.0', id: 90, method: 'tools/list', params: {} }
  for (const r of ready.replicas) {
    assert.equal((await rawPost(`${r.baseUrl}/mcp`, list, { ...headers, authorization: `Bearer ${BOB_KEY}` })).status, 404, `bob cannot use alice's session on ${r.name}`)
    assert.equal((await rawPost(`${r.baseUrl}/mcp`, list, headers)).status, 200, `alice's session works on ${r.name}`)
  }
  await transport.terminateSession()
  for (const r of ready.replicas) await waitFor(async () => (await rawPost(`${r.baseUrl}/mcp`, list, headers)).status === 404, `${r.name} to forget the deleted session`)
})

test('through HAProxy: a raw GET stream whose replica was SIGKILLed resumes with Last-Event-ID on another, replaying what was missed', { timeout: 90_000 }, async (t) => {
  const ready = await cluster(t, { catalog: { listChangedDebounceMs: 20 } })
  if (ready === undefined) return
  const url = new URL('/mcp', ready.balancer.url).href
  const alice = { authorization: `Bearer ${KEY}` }
  const { sessionId } = await rawInitialize(url, '2025-11-25', alice)
  const headers = { ...alice, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  const stream = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' } })
  assert.equal(stream.status, 200)
  const holder = ready.replicas.find(r => r.name === stream.headers.get(SERVED_BY_HEADER)) as Replica
  const changes = (events: Array<{ data: string }>): number => events.filter(e => e.data.includes('notifications/tools/list_changed')).length
  const first = readEvents(stream, events => changes(events) >= 1)
  const add = async (id: number, name: string): Promise<void> => {
    assert.equal((await rawPost(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__add_tool', arguments: { name } } }, headers)).status, 200)
  }
  await add(2, 'one')
  const seen = await first
  const priming = seen[0]
  assert.ok(priming?.id !== undefined && changes(seen) === 1, `a priming event, then the change: ${JSON.stringify(seen)}`)
  const changeEvent = seen.find(e => e.data.includes('notifications/tools/list_changed'))
  holder.kill('SIGKILL')
  await waitFor(async () => (await ready.balancer.serverStates())[holder.name]?.startsWith('DOWN') === true, 'HAProxy to see the replica gone', 15_000)
  const resumed = await fetch(url, { headers: { ...headers, accept: 'text/event-stream', 'last-event-id': priming.id } })
  assert.equal(resumed.status, 200)
  assert.notEqual(resumed.headers.get(SERVED_BY_HEADER), holder.name)
  const replaying = readEvents(resumed, events => changes(events) >= 2)
  // The replica that took the stream adopted the session at this GET, so the next change is news to it.
  await add(3, 'two')
  const replayed = await replaying
  assert.ok(replayed.some(e => e.id === changeEvent?.id), `the change after the priming event is replayed elsewhere, with its id: ${JSON.stringify(replayed)}`)
  assert.equal(changes(replayed), 2, 'then the stream carries on with the next change')
})

test('through HAProxy: a 2026-07-28 client\'s retries land on other replicas than their calls and resume them there; a requestState naming another replica is refused by it', { timeout: 90_000 }, async (t) => {
  const ready = await cluster(t, { http: { modernClients: true } })
  if (ready === undefined) return
  const client = new Client({ name: 'modern', version: '1' }, { capabilities: { sampling: {}, elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } })
  client.setRequestHandler('sampling/createMessage', () => ({ role: 'assistant', model: 'm', content: { type: 'text', text: 'sampled here' } }))
  client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { answer: 'yes' } }))
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', ready.balancer.url), { requestInit: { headers: { authorization: `Bearer ${KEY}` } } }))
  t.after(async () => { await client.close().catch(() => {}) })
  // Round robin over three: each retry lands on another replica than the call it resumes.
  for (let i = 0; i < 3; i++) {
    assert.equal(((await client.callTool({ name: 'web__ask', arguments: { prompt: 'p' } })) as ToolResult).content[0]?.text, 'sampled: sampled here')
    assert.equal(((await client.callTool({ name: 'web__elicit', arguments: {} })) as ToolResult).content[0]?.text, 'elicited: accept {"answer":"yes"}')
  }
  const published = await routed(ready.replicas, 'retry', 'published')
  assert.ok(published >= 1, 'some retries landed on another replica')
  assert.equal(await routed(ready.replicas, 'retry', 'delivered'), published, 'each one reached the replica where its call waits')

  // A requestState that names r1 but was never signed there: r0 forwards it, r1 refuses it.
  const owner = ready.replicas[1]?.logs.find(l => l.msg === 'sessions shared through Redis')?.replica
  assert.equal(typeof owner, 'string')
  const forged = await rawPost(`${ready.replicas[0]?.baseUrl as string}/mcp`, {
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name: 'web__ask', arguments: { prompt: 'p' }, inputResponses: { 1: {} }, requestState: `v1.${owner as string}.nothing.1.forged`, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } } }
  }, { authorization: `Bearer ${KEY}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'web__ask' })
  const refused = await forged.json() as { id: number, error?: { code: number, data?: { reason?: string } } }
  assert.equal(refused.id, 7)
  assert.equal(refused.error?.code, -32602)
  assert.equal(refused.error?.data?.reason, 'invalid_request_state')
})

test('through HAProxy: a task created on one replica is asked for on the others (tasks/get, tasks/result), its owner answers; another principal cannot', { timeout: 90_000 }, async (t) => {
  const everything = { name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] }
  const ready = await cluster(t, { upstreams: [everything], auth: { apiKeys: [{ id: 'alice', key: KEY }, { id: 'bob', key: BOB_KEY }] } })
  if (ready === undefined) return
  const url = new URL('/mcp', ready.balancer.url).href
  const session = async (key: string): Promise<(id: number, method: string, params: Record<string, unknown>) => Promise<{ result?: Record<string, unknown>, error?: { code: number } }>> => {
    const { sessionId } = await rawInitialize(url, '2025-11-25', { authorization: `Bearer ${key}` })
    const headers = { authorization: `Bearer ${key}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
    return async (id, method, params) => {
      const text = await (await rawPost(url, { jsonrpc: '2.0', id, method, params }, headers)).text()
      return JSON.parse(text.startsWith('{') ? text : text.split('\n').filter(l => l.startsWith('data:')).at(-1)?.slice(5) ?? '{}') as { result?: Record<string, unknown>, error?: { code: number } }
    }
  }
  const alice = await session(KEY)
  const created = await alice(2, 'tools/call', { name: 'everything__simulate-research-query', arguments: { topic: 'replicas' }, task: {} })
  const taskId = (created.result?.task as { taskId?: string } | undefined)?.taskId as string
  assert.match(taskId, /^task-[A-Za-z0-9_-]+\./, JSON.stringify(created))
  // Round robin over three: most of these land on a replica that does not hold the task.
  const done = await waitFor(async () => {
    const got = await alice(3, 'tasks/get', { taskId })
    assert.equal(got.result?.taskId, taskId, JSON.stringify(got))
    return got.result?.status === 'completed' || undefined
  }, 'the task to complete', 30_000)
  assert.equal(done, true)
  for (let i = 0; i < 3; i++) assert.match(JSON.stringify((await alice(4 + i, 'tasks/result', { taskId })).result?.content), /replicas/)
  const published = await routed(ready.replicas, 'task', 'published')
  assert.ok(published >= 1, 'some task requests landed on another replica')
  assert.equal(await routed(ready.replicas, 'task', 'delivered'), published, 'each reached the replica holding the task')
  const bob = await session(BOB_KEY)
  for (let i = 0; i < 3; i++) assert.equal((await bob(2 + i, 'tasks/get', { taskId })).error?.code, -32602, 'bob is told the task does not exist, wherever he asks')
})

test('through HAProxy: a 2026-07-28 client\'s task requests reach the replica that created the task, though it has no session', { timeout: 90_000 }, async (t) => {
  const jobs = await startModernTasksServer()
  t.after(() => jobs.close())
  const ready = await cluster(t, { upstreams: [{ name: 'jobs', transport: 'streamable-http', url: jobs.url }] })
  if (ready === undefined) return
  const url = new URL('/mcp', ready.balancer.url).href
  const send = async (method: string, params: Record<string, unknown>): Promise<{ result?: Record<string, unknown>, error?: { code: number } }> => {
    const name = typeof params.name === 'string' ? params.name : params.taskId as string
    const res = await rawPost(url, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } } } } }, {
      authorization: `Bearer ${KEY}`, 'mcp-protocol-version': MODERN, 'mcp-method': method, 'mcp-name': name
    })
    return await res.json() as { result?: Record<string, unknown>, error?: { code: number } }
  }
  const created = await send('tools/call', { name: 'jobs__slow_compute', arguments: { ms: 300 } })
  const taskId = created.result?.taskId as string
  assert.match(taskId ?? '', /^task-/, JSON.stringify(created))
  // Round robin over three: most land on a replica that did not create the task.
  for (let i = 0; i < 3; i++) assert.equal((await send('tasks/get', { taskId })).result?.taskId, taskId)
  await waitFor(async () => (await send('tasks/get', { taskId })).result?.status === 'completed' || undefined, 'the task to complete')
  const published = await routed(ready.replicas, 'task', 'published')
  assert.ok(published >= 1, 'some task requests landed on another replica')
  assert.equal(await routed(ready.replicas, 'task', 'delivered'), published)
})
