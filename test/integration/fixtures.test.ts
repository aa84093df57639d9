import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, ProtocolError, SSEClientTransport, StreamableHTTPClientTransport, UrlElicitationRequiredError } from '@modelcontextprotocol/client'
import type { JSONRPCMessage, NotificationTypeMap, Transport } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { WebSocketClientTransport } from '../../src/upstream/websocket-client-transport.ts'
import {
  AUTHORIZE_URL,
  BLOB_BASE64,
  CONSENT_URL,
  PLAIN_PROMPT_TEXT,
  RESOURCE_NOT_FOUND,
  parseFixtureArgs,
  startControllableHttpServer,
  startControllableServer
} from '../fixtures/controllable-server.ts'
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
async function connect (
  t: TestContext,
  transport: Transport,
  client = new Client({ name: 'fixture-test', version: '1.0.0' })
): Promise<{ client: Client, nextListChanged: () => Promise<void> }> {
  let notify: (() => void) | undefined
  client.setNotificationHandler('notifications/tools/list_changed', () => notify?.())
  t.after(() => client.close())
  await client.connect(transport)
  return {
    client,
    nextListChanged: () => withTimeout(new Promise<void>((resolve) => { notify = resolve }), 3_000, 'tools/list_changed')
  }
}

async function spawnAndConnect (t: TestContext, kind: Kind, args: string[], client?: Client): Promise<{ client: Client, nextListChanged: () => Promise<void> }> {
  if (kind === 'stdio') {
    const { command, args: argv } = fixtureCommand(args)
    return await connect(t, new StdioClientTransport({ command, args: argv, stderr: 'ignore' }), client)
  }
  const fixture = await startFixtureProcess(['--transport', kind, ...args])
  t.after(() => fixture.stop())
  return await connect(t, clientTransport(kind, fixture.url), client)
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
  // The standalone GET streams open asynchronously after initialization.
  await waitUntil(async () => (server.standaloneStreams?.() ?? 0) >= 2 || undefined, 'both sessions\' standalone GET streams')

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

type Observed = 'notifications/message' | 'notifications/resources/updated' | 'notifications/resources/list_changed' | 'notifications/prompts/list_changed'

/** Records every notification of one method; next(n) waits until n have arrived. */
function collect<M extends Observed> (client: Client, method: M): { seen: Array<NotificationTypeMap[M]>, next: (count?: number) => Promise<void> } {
  const seen: Array<NotificationTypeMap[M]> = []
  let wake: (() => void) | undefined
  client.setNotificationHandler(method, (notification) => {
    seen.push(notification)
    wake?.()
  })
  return {
    seen,
    next: (count = seen.length + 1) => withTimeout(new Promise<void>((resolve) => {
      wake = () => { if (seen.length >= count) resolve() }
      wake()
    }), 3_000, `${count} × ${method}`)
  }
}

function textOf (result: { content?: unknown }): string {
  const blocks = result.content as Array<{ type: string, text?: string }>
  return blocks.map((block) => block.text ?? '').join('')
}

async function call (client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ text: string, isError: boolean, structured: unknown }> {
  const result = await client.callTool({ name, arguments: args })
  return { text: textOf(result), isError: result.isError === true, structured: result.structuredContent }
}

async function waitUntil<T> (probe: () => Promise<T | undefined>, what: string): Promise<T> {
  return await withTimeout((async () => {
    for (;;) {
      const value = await probe()
      if (value !== undefined) return value
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })(), 3_000, what)
}

interface Stats { subscribes: number, unsubscribes: number, subscribed: string[], logLevel: string | null, rootsChanged: number, outgoingCancelled: number }

async function statsOf (client: Client): Promise<Stats> {
  return (await call(client, 'stats')).structured as Stats
}

function isCode (code: number) {
  return (error: unknown): boolean => error instanceof ProtocolError && error.code === code
}

for (const kind of ['stdio', 'http'] as const) {
  test(`${kind}: prompts paginate, render, complete and announce list changes`, { timeout: 15_000 }, async (t) => {
    const name = `p-${kind}`
    const { client } = await spawnAndConnect(t, kind, ['--name', name, '--page-size', '1'])
    const changes = collect(client, 'notifications/prompts/list_changed')

    const first = await client.request({ method: 'prompts/list', params: {} })
    assert.equal(first.prompts.length, 1)
    assert.ok(first.nextCursor)
    const all = (await client.listPrompts()).prompts
    assert.deepEqual(all.map((p) => p.name), ['greeting', 'plain'])
    assert.equal(all[0]?.description, `greeting from ${name}`)
    assert.deepEqual(all[0]?.arguments, [{ name: 'name', description: 'Who to greet.', required: true }])

    const greeting = await client.getPrompt({ name: 'greeting', arguments: { name: 'Ada' } })
    assert.deepEqual(greeting.messages, [{ role: 'user', content: { type: 'text', text: 'Hello, Ada!' } }])
    const plain = await client.getPrompt({ name: 'plain' })
    assert.deepEqual(plain.messages, [{ role: 'user', content: { type: 'text', text: PLAIN_PROMPT_TEXT } }])
    await assert.rejects(client.getPrompt({ name: 'greeting' }), isCode(-32602))
    await assert.rejects(client.getPrompt({ name: 'nope' }), isCode(-32602))

    const completed = await client.complete({ ref: { type: 'ref/prompt', name: 'greeting' }, argument: { name: 'name', value: 'al' } })
    assert.deepEqual(completed.completion.values, ['alice', 'albert'])

    assert.equal((await call(client, 'add_prompt', { name: 'late' })).text, 'added prompt late')
    await changes.next(1)
    assert.ok((await client.listPrompts()).prompts.some((p) => p.name === 'late'))
    assert.deepEqual((await client.getPrompt({ name: 'late' })).messages[0]?.content, { type: 'text', text: 'dynamic late' })
    assert.equal((await call(client, 'remove_prompt', { name: 'late' })).text, 'removed prompt late')
    await changes.next(2)
    assert.equal((await call(client, 'remove_prompt', { name: 'late' })).isError, true)
  })

  test(`${kind}: resources list, read, template, complete, subscribe and change`, { timeout: 15_000 }, async (t) => {
    const name = `r-${kind}`
    const base = `fixture://${name}`
    const { client } = await spawnAndConnect(t, kind, ['--name', name, '--page-size', '1'])
    const updates = collect(client, 'notifications/resources/updated')
    const changes = collect(client, 'notifications/resources/list_changed')

    const first = await client.request({ method: 'resources/list', params: {} })
    assert.equal(first.resources.length, 1)
    assert.ok(first.nextCursor)
    const resources = (await client.listResources()).resources
    assert.deepEqual(resources.map((r) => [r.uri, r.mimeType]), [[`${base}/hello`, 'text/plain'], [`${base}/blob`, 'application/octet-stream']])

    const hello = await client.readResource({ uri: `${base}/hello` })
    assert.deepEqual(hello.contents, [{ uri: `${base}/hello`, mimeType: 'text/plain', text: `hello from ${name}` }])
    const blob = (await client.readResource({ uri: `${base}/blob` })).contents[0]
    assert.ok(blob !== undefined && 'blob' in blob)
    assert.equal(blob.blob, BLOB_BASE64)
    assert.deepEqual([...Buffer.from(blob.blob, 'base64')], Array.from({ length: 16 }, (_, i) => i))

    const templates = (await client.listResourceTemplates()).resourceTemplates
    assert.deepEqual(templates.map((x) => x.uriTemplate), [`${base}/items/{id}`])
    const item = await client.readResource({ uri: `${base}/items/42` })
    assert.deepEqual(item.contents, [{ uri: `${base}/items/42`, mimeType: 'text/plain', text: `item 42 from ${name}` }])
    // The SDK client folds the wire's -32002 into its -32602 ResourceNotFoundError; the raw code is checked below.
    await assert.rejects(client.readResource({ uri: `${base}/missing` }), (error: unknown) => {
      return error instanceof ProtocolError && (error.data as { uri?: string }).uri === `${base}/missing`
    })
    const completed = await client.complete({ ref: { type: 'ref/resource', uri: `${base}/items/{id}` }, argument: { name: 'id', value: '1' } })
    assert.deepEqual(completed.completion.values, ['1', '10'])

    await client.subscribeResource({ uri: `${base}/hello` })
    assert.deepEqual((await statsOf(client)).subscribed, [`${base}/hello`])
    assert.equal((await call(client, 'touch', { uri: `${base}/hello` })).text, 'notified 1')
    await updates.next(1)
    assert.deepEqual(updates.seen[0]?.params, { uri: `${base}/hello` })
    assert.equal((await call(client, 'touch', { uri: `${base}/blob` })).text, 'notified 0')
    await client.unsubscribeResource({ uri: `${base}/hello` })
    assert.equal((await call(client, 'touch', { uri: `${base}/hello` })).text, 'notified 0')
    const stats = await statsOf(client)
    assert.deepEqual([stats.subscribes, stats.unsubscribes, stats.subscribed], [1, 1, []])

    assert.equal((await call(client, 'add_resource', { uri: 'memo://extra' })).text, 'added resource memo://extra')
    await changes.next(1)
    assert.ok((await client.listResources()).resources.some((r) => r.uri === 'memo://extra'))
    assert.deepEqual((await client.readResource({ uri: 'memo://extra' })).contents[0], { uri: 'memo://extra', mimeType: 'text/plain', text: 'dynamic memo://extra' })
    assert.equal((await call(client, 'remove_resource', { uri: 'memo://extra' })).text, 'removed resource memo://extra')
    await changes.next(2)
    assert.equal(updates.seen.length, 1)
  })

  test(`${kind}: logging honours setLevel and relates messages to the call`, { timeout: 15_000 }, async (t) => {
    const { client } = await spawnAndConnect(t, kind, ['--name', `l-${kind}`])
    const messages = collect(client, 'notifications/message')

    const plain = await call(client, 'log')
    assert.equal(plain.text, 'logged 3')
    assert.deepEqual(messages.seen.map((m) => m.params), [1, 2, 3].map((i) => ({ level: 'info', logger: 'fixture', data: `log ${i}` })))

    await client.setLoggingLevel('warning')
    assert.equal((await statsOf(client)).logLevel, 'warning')
    const filtered = await call(client, 'log', { count: 2, level: 'info' })
    assert.deepEqual([filtered.text, filtered.structured], ['logged 2', { count: 2, sent: 0 }])
    const loud = await call(client, 'log', { count: 2, level: 'error', text: 'boom' })
    assert.equal(loud.text, 'logged 2')
    // Related messages precede the result, so they are already here when callTool resolves.
    assert.deepEqual(messages.seen.slice(3).map((m) => [m.params.level, m.params.data]), [['error', 'boom 1'], ['error', 'boom 2']])

    assert.equal((await call(client, 'log_later', { delayMs: 100, text: 'later', level: 'critical' })).text, 'will log in 100 ms')
    assert.equal(messages.seen.length, 5)
    await messages.next(6)
    assert.deepEqual(messages.seen[5]?.params, { level: 'critical', logger: 'fixture', data: 'later' })
  })

  test(`${kind}: sampling, elicitation and roots go to a capable client and its errors come back`, { timeout: 15_000 }, async (t) => {
    const client = new Client({ name: 'capable', version: '1.0.0' }, {
      capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } }
    })
    const elicitations: unknown[] = []
    let hangCancelled = false
    let hangStarted: (() => void) | undefined
    client.setRequestHandler('sampling/createMessage', async (request, ctx) => {
      const first = request.params.messages[0]?.content
      const prompt = first !== undefined && !Array.isArray(first) && first.type === 'text' ? first.text : ''
      assert.equal(request.params.maxTokens, 50)
      if (prompt === 'reject') throw new ProtocolError(-1, 'User rejected sampling')
      if (prompt === 'hang') {
        hangStarted?.()
        await new Promise((resolve) => ctx.mcpReq.signal.addEventListener('abort', resolve, { once: true }))
        hangCancelled = true
      }
      if (prompt === 'cancel-me') {
        await client.notification({ method: 'notifications/cancelled', params: { requestId: ctx.mcpReq.id, reason: 'test' } })
      }
      return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `echo ${prompt}` } }
    })
    client.setRequestHandler('elicitation/create', (request) => {
      elicitations.push(request.params)
      return request.params.mode === 'url' ? { action: 'decline' } : { action: 'accept', content: { answer: '42' } }
    })
    client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///tmp/project', name: 'project' }] }))
    await spawnAndConnect(t, kind, ['--name', `c-${kind}`], client)

    assert.deepEqual(await call(client, 'ask', { prompt: 'hi' }), { text: 'sampled: echo hi', isError: false, structured: { model: 'test-model', text: 'echo hi' } })
    const rejected = await call(client, 'ask', { prompt: 'reject' })
    assert.deepEqual([rejected.text, rejected.isError], ['error -1: User rejected sampling', true])

    assert.equal((await call(client, 'elicit')).text, 'elicited: accept {"answer":"42"}')
    const url = await call(client, 'elicit', { mode: 'url' })
    assert.equal(url.text, 'elicited: decline null')
    const [form, consent] = elicitations as Array<Record<string, unknown>>
    assert.deepEqual(form?.requestedSchema, { type: 'object', properties: { answer: { type: 'string', description: 'Your answer' } } })
    assert.equal(consent?.mode, 'url')
    assert.equal(consent?.url, CONSENT_URL)
    assert.equal(consent?.elicitationId, (url.structured as { elicitationId: string }).elicitationId)

    assert.equal((await call(client, 'roots')).text, '[{"uri":"file:///tmp/project","name":"project"}]')
    await client.sendRootsListChanged()
    await waitUntil(async () => (await statsOf(client)).rootsChanged === 1 ? true : undefined, 'roots/list_changed to be counted')

    await assert.rejects(call(client, 'need_url'), (error: unknown) => {
      assert.ok(error instanceof UrlElicitationRequiredError)
      assert.equal(error.code, -32042)
      assert.deepEqual(error.elicitations.map((e) => [e.mode, e.url]), [['url', AUTHORIZE_URL]])
      return true
    })

    // A cancelled tool call cancels the sampling request it is waiting on.
    const abort = new AbortController()
    const started = new Promise<void>((resolve) => { hangStarted = resolve })
    const hanging = client.callTool({ name: 'ask', arguments: { prompt: 'hang' } }, { signal: abort.signal })
    await withTimeout(started, 3_000, 'the sampling request')
    abort.abort('test gives up')
    await assert.rejects(hanging)
    await waitUntil(async () => hangCancelled ? true : undefined, 'the fixture to cancel its sampling request')

    assert.equal((await call(client, 'ask', { prompt: 'cancel-me' })).text, 'sampled: echo cancel-me')
    assert.equal((await statsOf(client)).outgoingCancelled, 1)
  })

  test(`${kind}: a client without sampling, elicitation or roots answers -32601, passed back as tool errors`, { timeout: 15_000 }, async (t) => {
    const { client } = await spawnAndConnect(t, kind, ['--name', `n-${kind}`])
    for (const [name, args] of [['ask', { prompt: 'hi' }], ['elicit', {}], ['roots', {}]] as const) {
      const result = await call(client, name, args)
      assert.equal(result.isError, true, name)
      assert.match(result.text, /^error -32601: /, name)
    }
    assert.deepEqual([(await call(client, 'counter')).text, (await call(client, 'counter')).text], ['1', '2'])
  })
}

test('http: counters and subscriptions are per session, touch reaches other sessions', { timeout: 10_000 }, async (t) => {
  const server = await startControllableHttpServer({ name: 'multi' })
  t.after(() => server.close())
  const a = await connect(t, clientTransport('http', server.url))
  const b = await connect(t, clientTransport('http', server.url))
  const updatesForA = collect(a.client, 'notifications/resources/updated')
  await a.client.subscribeResource({ uri: 'fixture://multi/hello' })
  // The standalone GET streams open asynchronously after initialization.
  await waitUntil(async () => (server.standaloneStreams?.() ?? 0) >= 2 || undefined, 'both sessions\' standalone GET streams')

  assert.equal((await call(b.client, 'touch', { uri: 'fixture://multi/hello' })).text, 'notified 1')
  await updatesForA.next(1)
  assert.deepEqual(server.state.stats.subscribed, ['fixture://multi/hello'])

  assert.deepEqual([(await call(a.client, 'counter')).text, (await call(a.client, 'counter')).text], ['1', '2'])
  assert.deepEqual((await call(b.client, 'counter')).structured, { counter: 1 })
})

test('http: an unknown resource is -32002 with data.uri on the wire', { timeout: 10_000 }, async (t) => {
  const server = await startControllableHttpServer({ name: 'wire' })
  t.after(() => server.close())
  const transport = clientTransport('http', server.url)
  const raw: JSONRPCMessage[] = []
  // Client.connect chains an onmessage that is already set, so this sees the raw frames.
  transport.onmessage = (message: JSONRPCMessage) => { raw.push(message) }
  const { client } = await connect(t, transport)
  await assert.rejects(client.readResource({ uri: 'fixture://wire/nothing' }))
  const errors = raw.flatMap((message) => 'error' in message ? [message.error] : [])
  assert.deepEqual(errors.map((e) => [e.code, e.data]), [[RESOURCE_NOT_FOUND, { uri: 'fixture://wire/nothing' }]])
  assert.equal(RESOURCE_NOT_FOUND, -32002)
})

test('sharedUris gives every fixture the same static URIs', { timeout: 10_000 }, async (t) => {
  assert.equal(parseFixtureArgs(['--shared-uris']).sharedUris, true)
  assert.equal(parseFixtureArgs([]).sharedUris, false)
  const server = await startControllableHttpServer({ name: 'one', sharedUris: true })
  t.after(() => server.close())
  const { client } = await connect(t, clientTransport('http', server.url))
  const resources = (await client.listResources()).resources
  assert.deepEqual(resources.map((r) => r.uri), ['fixture://shared/hello', 'fixture://shared/blob'])
  assert.deepEqual((await client.readResource({ uri: 'fixture://shared/hello' })).contents[0], {
    uri: 'fixture://shared/hello', mimeType: 'text/plain', text: 'hello from one'
  })
  assert.deepEqual((await client.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate), ['fixture://one/items/{id}'])
})
