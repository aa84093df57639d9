import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readEvents } from '../helpers/sse-events.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

// 2025-11-25 experimental tasks through the gateway, against the published server-everything over
// stdio, whose simulate-research-query tool runs as a task (four one-second stages).
const ALICE = 'alice-key-0123456789abcdef'
const BOB = 'bob-key-0123456789abcdef01'
const TOOL = 'everything__simulate-research-query'

interface Rpc { result?: Record<string, unknown>, error?: { code: number, message: string } }

test('a task created on an upstream gets the gateway\'s id; tasks/get, tasks/result, tasks/list and status notifications use it; another principal sees nothing of it', { timeout: 60_000 }, async (t) => {
  const gw = await startGateway(t, JSON.stringify({
    auth: { apiKeys: [{ id: 'alice', key: ALICE }, { id: 'bob', key: BOB }] },
    upstreams: [{ name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] }]
  }))
  await waitReady(gw)
  const session = async (key: string): Promise<(id: number, method: string, params: Record<string, unknown>) => Promise<Rpc>> => {
    const { sessionId, result } = await rawInitialize(gw.url, '2025-11-25', { authorization: `Bearer ${key}` })
    assert.deepEqual(result.capabilities && (result.capabilities as Record<string, unknown>).tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } })
    const headers = { authorization: `Bearer ${key}`, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
    await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)
    return async (id, method, params) => {
      const res = await rawPost(gw.url, { jsonrpc: '2.0', id, method, params }, headers)
      assert.equal(res.status, 200)
      const text = await res.text()
      // JSON, or an SSE stream whose last event is the answer.
      const data = text.startsWith('{') ? text : text.split('\n').filter(l => l.startsWith('data:')).at(-1)?.slice(5) ?? '{}'
      return JSON.parse(data) as Rpc
    }
  }
  const alice = await session(ALICE)

  const created = await alice(2, 'tools/call', { name: TOOL, arguments: { topic: 'relays' }, task: { ttl: 60_000 } })
  const task = created.result?.task as { taskId: string, status: string } | undefined
  assert.match(task?.taskId ?? '', /^task-/, JSON.stringify(created))
  const taskId = task?.taskId as string

  const done = await waitFor(async () => {
    const got = await alice(3, 'tasks/get', { taskId })
    assert.equal(got.result?.taskId, taskId, JSON.stringify(got))
    return got.result?.status === 'completed' ? got : undefined
  }, 'the task to complete', 20_000)
  assert.equal(done.result?.status, 'completed')
  const result = await alice(4, 'tasks/result', { taskId })
  assert.match(JSON.stringify(result.result?.content), /relays/, JSON.stringify(result))
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_tasks_remembered'), 1)
  const listed = await alice(5, 'tasks/list', {})
  assert.deepEqual((listed.result?.tasks as Array<{ taskId: string }>).map(x => x.taskId), [taskId])

  const bob = await session(BOB)
  const stolen = await bob(2, 'tasks/get', { taskId })
  assert.equal(stolen.error?.code, -32602, 'another principal is told the task does not exist')
  assert.deepEqual((await bob(3, 'tasks/list', {})).result?.tasks, [])
  assert.equal((await alice(6, 'tasks/get', { taskId: 'task-nothing' })).error?.code, -32602)
})

test('status notifications of a task reach the session that created it, under the gateway\'s id; tasks/cancel cancels it upstream', { timeout: 60_000 }, async (t) => {
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] }]
  }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)
  const stream = await fetch(gw.url, { headers: { ...headers, accept: 'text/event-stream' } })
  assert.equal(stream.status, 200)
  const statuses = readEvents(stream, events => events.some(e => e.data.includes('notifications/tasks/status') && e.data.includes('"completed"')))
  const created = await (await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: TOOL, arguments: { topic: 'notes' }, task: {} } }, headers)).json() as Rpc
  const taskId = (created.result?.task as { taskId: string }).taskId
  const notes = (await statuses).filter(e => e.data !== '').map(e => JSON.parse(e.data) as { method?: string, params?: { taskId?: string, status?: string } }).filter(m => m.method === 'notifications/tasks/status')
  assert.ok(notes.length >= 1, 'status notifications arrived')
  assert.ok(notes.every(n => n.params?.taskId === taskId), JSON.stringify(notes))

  const second = await (await rawPost(gw.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: TOOL, arguments: { topic: 'stop' }, task: {} } }, headers)).json() as Rpc
  const secondId = (second.result?.task as { taskId: string }).taskId
  const cancelled = await (await rawPost(gw.url, { jsonrpc: '2.0', id: 4, method: 'tasks/cancel', params: { taskId: secondId } }, headers)).json() as Rpc
  assert.equal(cancelled.result?.taskId, secondId, JSON.stringify(cancelled))
  assert.equal(cancelled.result?.status, 'cancelled')
})
