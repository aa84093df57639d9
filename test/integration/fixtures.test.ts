import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, SSEClientTransport, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { Transport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { WebSocketClientTransport } from '../../src/upstream/websocket-client-transport.ts'
import { startControllableHttpServer, startControllableServer } from '../fixtures/controllable-server.ts'
import { fixtureCommand, startFixtureProcess } from '../helpers/spawn-fixture.ts'

type Kind = 'stdio' | 'http' | 'sse' | 'websocket'

function withTimeout<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

function clientTransport (kind: Exclude<Kind, 'stdio'>, url: string, headers: Record<string, string> = {}): Transport {
  const target = new URL(url)
  if (kind === 'http') return new StreamableHTTPClientTransport(target, { requestInit: { headers } })
  if (kind === 'sse') return new SSEClientTransport(target, { requestInit: { headers } })
  return new WebSocketClientTransport(target, { headers })
}

/** Connected client plus a promise for the next tools/list_changed it receives. */
async function connect (t: TestContext, transport: Transport): Promise<{ client: Client, nextListChanged: () => Promise<void> }> {
  const client = new Client({ name: 'fixture-test', version: '1.0.0' })
  let notify: (() => void) | undefined
  client.setNotificationHandler('notifications/tools/list_changed', () => notify?.())
  t.after(() => client.close())
  await client.connect(transport)
  return {
    client,
    nextListChanged: () => withTimeout(new Promise<void>((resolve) => { notify = resolve }), 3_000, 'tools/list_changed')
  }
}

async function spawnAndConnect (t: TestContext, kind: Kind, args: string[]): Promise<{ client: Client, nextListChanged: () => Promise<void> }> {
  if (kind === 'stdio') {
    const { command, args: argv } = fixtureCommand(args)
    return await connect(t, new StdioClientTransport({ command, args: argv, stderr: 'ignore' }))
  }
  const fixture = await startFixtureProcess(['--transport', kind, ...args])
  t.after(() => fixture.stop())
  return await connect(t, clientTransport(kind, fixture.url))
}

for (const kind of ['stdio', 'http', 'sse', 'websocket'] as const) {
  test(`fixture process over ${kind}: paginated list, echo, list_changed`, { timeout: 10_000 }, async (t) => {
    const { client, nextListChanged } = await spawnAndConnect(t, kind, ['--name', `up-${kind}`, '--page-size', '2', '--extra-tools', '3'])

    // An explicit request sees raw pages; listTools() without a cursor would aggregate them.
    const first = await client.request({ method: 'tools/list', params: {} })
    assert.equal(first.tools.length, 2)
    assert.ok(first.nextCursor, 'first page must point at the next one')
    const names = first.tools.map((tool) => tool.name)
    let cursor: string | undefined = first.nextCursor
    let pages = 1
    while (cursor !== undefined) {
      const page = await client.listTools({ cursor })
      assert.ok(page.tools.length <= 2)
      names.push(...page.tools.map((tool) => tool.name))
      cursor = page.nextCursor
      pages++
    }
    assert.ok(pages > 2)
    assert.deepEqual(names, (await client.listTools()).tools.map((tool) => tool.name))
    assert.ok(names.includes('echo') && names.includes('tool_0003') && !names.includes('tool_0004'))

    const echo = first.tools.find((tool) => tool.name === 'echo')
    assert.deepEqual(echo?.outputSchema, { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] })
    assert.deepEqual(echo?._meta, { 'example.com/owner': 'fixtures' })

    const echoed = await client.callTool({ name: 'echo', arguments: { text: `via ${kind}` } })
    assert.deepEqual(echoed.content, [{ type: 'text', text: `via ${kind}` }])
    assert.deepEqual(echoed.structuredContent, { text: `via ${kind}` })

    const whoami = await client.callTool({ name: 'whoami', arguments: {} })
    assert.deepEqual(whoami.content, [{ type: 'text', text: `up-${kind}` }])

    const changed = nextListChanged()
    await client.callTool({ name: 'add_tool', arguments: { name: 'late_arrival' } })
    await changed
    const after = await client.listTools()
    assert.ok(after.tools.some((tool) => tool.name === 'late_arrival'))
    const dynamic = await client.callTool({ name: 'late_arrival', arguments: {} })
    assert.deepEqual(dynamic.content, [{ type: 'text', text: 'dynamic late_arrival' }])
  })
}

test('http: tool changes reach every session and whoami shows request headers', { timeout: 10_000 }, async (t) => {
  const server = await startControllableHttpServer({ name: 'shared' })
  t.after(() => server.close())
  const a = await connect(t, clientTransport('http', server.url, { authorization: 'Bearer client-a' }))
  const b = await connect(t, clientTransport('http', server.url))
  // B's standalone GET stream opens asynchronously after initialization.
  await new Promise((resolve) => setTimeout(resolve, 200))

  const seenByB = b.nextListChanged()
  await a.client.callTool({ name: 'add_tool', arguments: { name: 'from_a' } })
  await seenByB
  assert.ok((await b.client.listTools()).tools.some((tool) => tool.name === 'from_a'))

  const removedForA = a.nextListChanged()
  await b.client.callTool({ name: 'remove_tool', arguments: { name: 'from_a' } })
  await removedForA
  assert.ok(!(await a.client.listTools()).tools.some((tool) => tool.name === 'from_a'))

  const whoami = await a.client.callTool({ name: 'whoami', arguments: {} })
  const seen = whoami.structuredContent as { name: string, headers?: Record<string, string> }
  assert.equal(seen.name, 'shared')
  assert.equal(seen.headers?.authorization, 'Bearer client-a')
})

for (const kind of ['http', 'sse', 'websocket'] as const) {
  test(`${kind}: progress, cancellation, rich content and errors`, { timeout: 10_000 }, async (t) => {
    const server = await startControllableServer(kind, { name: kind })
    t.after(() => server.close())
    const { client } = await connect(t, clientTransport(kind, server.url))

    const progress: Array<{ progress: number, total?: number, message?: string }> = []
    const slow = await client.callTool({ name: 'slow', arguments: { ms: 30, steps: 3 } }, { onprogress: (p) => progress.push(p) })
    assert.deepEqual(slow.content, [{ type: 'text', text: 'done' }])
    assert.deepEqual(progress.map((p) => [p.progress, p.total]), [[1, 3], [2, 3], [3, 3]])

    const abort = new AbortController()
    const stalled = client.callTool({ name: 'stall', arguments: {} }, { signal: abort.signal })
    setTimeout(() => abort.abort('test gives up'), 50)
    await assert.rejects(stalled)
    const stats = await withTimeout((async () => {
      for (;;) {
        const result = await client.callTool({ name: 'stats', arguments: {} })
        const value = result.structuredContent as { cancelled: number, calls: number }
        if (value.cancelled > 0) return value
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })(), 3_000, 'the fixture to record the cancellation')
    assert.equal(stats.cancelled, 1)

    const rich = await client.callTool({ name: 'rich', arguments: {} })
    assert.deepEqual(rich.content.map((block) => block.type), ['text', 'image', 'audio', 'resource_link', 'resource'])
    assert.deepEqual(rich._meta, { 'example.com/trace': 'abc' })

    const failed = await client.callTool({ name: 'fail', arguments: {} })
    assert.equal(failed.isError, true)
    assert.deepEqual(failed.content, [{ type: 'text', text: 'it failed' }])
  })
}

test('bad cursor loop keeps answering the same nextCursor', { timeout: 10_000 }, async (t) => {
  const server = await startControllableServer('http', { pageSize: 3, badCursorLoop: true })
  t.after(() => server.close())
  const { client } = await connect(t, clientTransport('http', server.url))
  const first = await client.request({ method: 'tools/list', params: {} })
  assert.ok(first.nextCursor)
  const second = await client.listTools({ cursor: first.nextCursor })
  const third = await client.listTools({ cursor: second.nextCursor })
  assert.equal(second.nextCursor, first.nextCursor)
  assert.equal(third.nextCursor, first.nextCursor)
})

test('crash makes the fixture process exit with code 1', { timeout: 10_000 }, async (t) => {
  const fixture = await startFixtureProcess(['--transport', 'websocket'])
  t.after(() => fixture.stop())
  const { client } = await connect(t, clientTransport('websocket', fixture.url))
  const closed = new Promise<void>((resolve) => { client.onclose = resolve })
  await assert.rejects(client.callTool({ name: 'crash', arguments: {} }))
  await withTimeout(closed, 3_000, 'the client to notice the crash')
  const exit = await withTimeout(fixture.exited, 3_000, 'the fixture to exit')
  assert.equal(exit.code, 1)
})
