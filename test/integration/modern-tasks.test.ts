import { test } from 'node:test'
import assert from 'node:assert/strict'
import { TASKS_EXTENSION, startModernTasksServer } from '../fixtures/modern-tasks-server.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { rawPost, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

// The 2026-07-28 tasks extension, passed through: a 2026-07-28 upstream that runs a tool as a task,
// and 2026-07-28 clients that declare the extension, with the gateway's ids and principals between.
const ALICE = 'alice-key-0123456789abcdef'
const BOB = 'bob-key-0123456789abcdef01'

interface Rpc { result?: Record<string, unknown>, error?: { code: number, message: string, data?: Record<string, unknown> } }

test('a 2026-07-28 upstream\'s task reaches a client that declares the tasks extension under the gateway\'s id; tasks/get, tasks/cancel go to the upstream; the rest is refused as the extension says', { timeout: 60_000 }, async (t) => {
  const upstream = await startModernTasksServer()
  t.after(() => upstream.close())
  const gw = await startGateway(t, JSON.stringify({
    auth: { apiKeys: [{ id: 'alice', key: ALICE }, { id: 'bob', key: BOB }] },
    upstreams: [{ name: 'jobs', transport: 'streamable-http', url: upstream.url }]
  }))
  await waitReady(gw)
  const send = async (key: string, method: string, params: Record<string, unknown>, extensions: boolean | undefined = true): Promise<{ status: number, body: Rpc }> => {
    const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined
    const capabilities = extensions === true ? { extensions: { [TASKS_EXTENSION]: {} } } : {}
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': capabilities } } }, {
      authorization: `Bearer ${key}`, 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name })
    })
    return { status: res.status, body: await res.json() as Rpc }
  }

  const discovered = await send(ALICE, 'server/discover', {})
  assert.deepEqual((discovered.body.result?.capabilities as Record<string, unknown>).extensions, { [TASKS_EXTENSION]: {} })
  const created = await send(ALICE, 'tools/call', { name: 'jobs__slow_compute', arguments: { ms: 200 } })
  assert.equal(created.body.result?.resultType, 'task', JSON.stringify(created.body))
  const taskId = created.body.result?.taskId as string
  assert.match(taskId, /^task-/)
  const done = await waitFor(async () => {
    const got = await send(ALICE, 'tasks/get', { taskId })
    assert.equal(got.body.result?.taskId, taskId, JSON.stringify(got.body))
    return got.body.result?.status === 'completed' ? got.body.result : undefined
  }, 'the task to complete')
  assert.deepEqual((done.result as { content: unknown }).content, [{ type: 'text', text: 'computed in 200 ms' }], 'the result inline, once completed')
  assert.notEqual(upstream.stats.lastTaskName, taskId, 'the upstream is asked under its own id (in Mcp-Name too)')

  // Another principal: it does not exist. Without the extension: -32021. What the extension has not: 404.
  assert.equal((await send(BOB, 'tasks/get', { taskId })).body.error?.code, -32602)
  const undeclared = await send(ALICE, 'tasks/get', { taskId }, false)
  assert.equal(undeclared.status, 400)
  assert.equal(undeclared.body.error?.code, -32021)
  for (const method of ['tasks/result', 'tasks/list']) {
    const refused = await send(ALICE, method, method === 'tasks/result' ? { taskId } : {})
    assert.equal(refused.status, 404, method)
    assert.equal(refused.body.error?.code, -32601, method)
  }

  const second = await send(ALICE, 'tools/call', { name: 'jobs__slow_compute', arguments: { ms: 30_000 } })
  const secondId = second.body.result?.taskId as string
  const ack = await send(ALICE, 'tasks/cancel', { taskId: secondId })
  assert.deepEqual(ack.body.result?.resultType, 'complete', JSON.stringify(ack.body))
  assert.equal(ack.body.result?.taskId, undefined, 'an acknowledgement, not a task')
  assert.equal((await send(ALICE, 'tasks/get', { taskId: secondId })).body.result?.status, 'cancelled')
  assert.equal((await send(ALICE, 'tasks/update', { taskId: secondId, inputResponses: {} })).body.result?.resultType, 'complete')
})
