import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { BLOB_BASE64, GREETING_NAMES, ITEM_IDS, PLAIN_PROMPT_TEXT, startControllableHttpServer } from '../fixtures/controllable-server.ts'
import type { ControllableServerHandle, ControllableServerOptions } from '../fixtures/controllable-server.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

interface Upstream { fixture: ControllableServerHandle, entry: Record<string, unknown> }
interface Downstream { client: Client, transport: StreamableHTTPClientTransport, updates: string[] }
interface RpcReply { result?: Record<string, unknown>, error?: { code: number, message: string, data?: unknown } }
interface Message { content: unknown }

/** An in-process HTTP fixture and its gateway config entry; `extra` goes into the entry. */
async function upstream (t: TestContext, name: string, options: ControllableServerOptions = {}, extra: Record<string, unknown> = {}): Promise<Upstream> {
  const fixture = await startControllableHttpServer({ name, ...options })
  t.after(() => fixture.close())
  return { fixture, entry: { name, transport: 'streamable-http', url: fixture.url, ...extra } }
}

async function gateway (t: TestContext, upstreams: unknown[], catalog: Record<string, unknown> = {}): Promise<RunningGateway> {
  const gw = await startGateway(t, JSON.stringify({ upstreams, catalog: { listChangedDebounceMs: 20, ...catalog } }))
  await waitReady(gw)
  return gw
}

/** A client whose standalone stream is open, so unsolicited notifications can reach it. */
async function downstream (t: TestContext, gw: RunningGateway): Promise<Downstream> {
  const client = new Client({ name: 'test-client', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(gw.url))
  const updates: string[] = []
  client.setNotificationHandler('notifications/resources/updated', (n) => { updates.push(n.params.uri) })
  await client.connect(transport)
  t.after(async () => { await client.close().catch(() => {}) })
  await waitFor(() => gw.gateway.sessions.peek(transport.sessionId ?? '')?.hasStream, 'the client\'s GET stream')
  return { client, transport, updates }
}

let nextId = 1
async function rpc (gw: RunningGateway, sessionId: string, method: string, params: Record<string, unknown> = {}): Promise<RpcReply> {
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: nextId++, method, params }, { 'mcp-session-id': sessionId })
  return await res.json() as RpcReply
}

/** Walks a list method page by page with raw cursors; returns each page's `id` values. */
async function walk (gw: RunningGateway, method: string, key: string, id: string): Promise<string[][]> {
  const { sessionId } = await rawInitialize(gw.url)
  const pages: string[][] = []
  let cursor: string | undefined
  do {
    const { result } = await rpc(gw, sessionId, method, cursor === undefined ? {} : { cursor })
    assert.ok(result !== undefined, `${method} answered`)
    pages.push((result[key] as Array<Record<string, string>>).map(item => item[id] as string))
    cursor = result.nextCursor as string | undefined
  } while (cursor !== undefined && pages.length < 20)
  return pages
}

function firstText (result: { messages: Message[] }): string | undefined {
  return (result.messages[0]?.content as { text?: string } | undefined)?.text
}

async function readText (client: Client, uri: string): Promise<string | undefined> {
  const { contents } = await client.readResource({ uri })
  const first = contents[0]
  return first !== undefined && 'text' in first ? first.text : undefined
}

async function touch (client: Client, prefix: string, uri: string): Promise<number> {
  const result = await client.callTool({ name: `${prefix}__touch`, arguments: { uri } })
  return (result.structuredContent as { notified: number }).notified
}

async function forwarded (gw: RunningGateway, upstream: string, method: string, outcome = 'ok'): Promise<number | undefined> {
  return metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_forwarded_requests_total', { upstream, method, outcome })
}

async function directClient (t: TestContext, url: string): Promise<Client> {
  const client = new Client({ name: 'direct', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  t.after(async () => { await client.close() })
  return client
}

test('prompts of every upstream are merged under prefixes and prompts/get reaches the upstream that owns the name', async (t) => {
  const alpha = await upstream(t, 'alpha')
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [alpha.entry, beta.entry])
  const { client } = await downstream(t, gw)
  const { prompts } = await client.listPrompts()
  assert.deepEqual(prompts.map(p => p.name), ['alpha__greeting', 'alpha__plain', 'beta__greeting', 'beta__plain'])
  assert.deepEqual(prompts.find(p => p.name === 'beta__greeting'), {
    name: 'beta__greeting',
    title: 'Greeting',
    description: 'greeting from beta',
    arguments: [{ name: 'name', description: 'Who to greet.', required: true }]
  })
  const fromAlpha = await client.getPrompt({ name: 'alpha__greeting', arguments: { name: 'Ann' } })
  const fromBeta = await client.getPrompt({ name: 'beta__greeting', arguments: { name: 'Bob' } })
  assert.equal(fromAlpha.description, 'greeting from alpha')
  assert.equal(firstText(fromAlpha), 'Hello, Ann!')
  assert.equal(fromBeta.description, 'greeting from beta')
  assert.equal(firstText(fromBeta), 'Hello, Bob!')
  assert.equal(firstText(await client.getPrompt({ name: 'beta__plain' })), PLAIN_PROMPT_TEXT)

  const { sessionId } = await rawInitialize(gw.url)
  for (const name of ['alpha__nothing', 'greeting', 'gamma__greeting', 'alpha_greeting']) {
    const reply = await rpc(gw, sessionId, 'prompts/get', { name, arguments: { name: 'x' } })
    assert.equal(reply.error?.code, -32602, name)
  }
  const missingArg = await rpc(gw, sessionId, 'prompts/get', { name: 'alpha__greeting' })
  assert.equal(missingArg.error?.code, -32602, 'the upstream\'s own error passes through')
  assert.match(missingArg.error?.message ?? '', /requires argument 'name'/)
  assert.equal(await forwarded(gw, 'beta', 'prompts/get'), 2)
  assert.equal(await forwarded(gw, 'alpha', 'prompts/get'), 1)
  assert.equal(await forwarded(gw, 'alpha', 'prompts/get', 'upstream_error'), 1)
})

test('prompt include, exclude and rename apply, and completion reaches the upstream under its own prompt name', async (t) => {
  const alpha = await upstream(t, 'alpha', {}, { prompts: { exclude: ['plain'], rename: { greeting: 'hi' } } })
  const beta = await upstream(t, 'beta', {}, { prompts: { include: ['plain'] } })
  const gw = await gateway(t, [alpha.entry, beta.entry])
  const { client } = await downstream(t, gw)
  assert.deepEqual((await client.listPrompts()).prompts.map(p => p.name), ['alpha__hi', 'beta__plain'])
  assert.equal(firstText(await client.getPrompt({ name: 'alpha__hi', arguments: { name: 'Cy' } })), 'Hello, Cy!')
  const { sessionId } = await rawInitialize(gw.url)
  for (const name of ['alpha__greeting', 'alpha__plain', 'beta__greeting']) {
    assert.equal((await rpc(gw, sessionId, 'prompts/get', { name, arguments: { name: 'x' } })).error?.code, -32602, name)
  }

  const byPrompt = await client.complete({ ref: { type: 'ref/prompt', name: 'alpha__hi' }, argument: { name: 'name', value: 'al' } })
  assert.deepEqual(byPrompt.completion.values, GREETING_NAMES.filter(n => n.startsWith('al')), 'ref.name was rewritten to greeting')
  // Each fixture completes only its own template, so values prove the routing.
  const byTemplate = await client.complete({ ref: { type: 'ref/resource', uri: 'fixture://beta/items/{id}' }, argument: { name: 'id', value: '1' } })
  assert.deepEqual(byTemplate.completion.values, ['1', '10'])
  const all = await client.complete({ ref: { type: 'ref/resource', uri: 'fixture://alpha/items/{id}' }, argument: { name: 'id', value: '' } })
  assert.deepEqual(all.completion.values, ITEM_IDS)
  const excluded = await rpc(gw, sessionId, 'completion/complete', { ref: { type: 'ref/prompt', name: 'beta__greeting' }, argument: { name: 'name', value: '' } })
  assert.equal(excluded.error?.code, -32602)
  assert.equal(await forwarded(gw, 'alpha', 'completion/complete'), 2)
  assert.equal(await forwarded(gw, 'beta', 'completion/complete'), 1)
})

test('prompts, resources and templates are served in pages with gateway cursors; a bad cursor is -32602', async (t) => {
  // The upstream pages too (one item per page), so the gateway must follow its cursors.
  const alpha = await upstream(t, 'alpha', { pageSize: 1 })
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [alpha.entry, beta.entry], { pageSize: 3 })
  assert.deepEqual(await walk(gw, 'prompts/list', 'prompts', 'name'), [['alpha__greeting', 'alpha__plain', 'beta__greeting'], ['beta__plain']])
  assert.deepEqual(await walk(gw, 'resources/list', 'resources', 'uri'), [
    ['fixture://alpha/blob', 'fixture://alpha/hello', 'fixture://beta/blob'],
    ['fixture://beta/hello']
  ])
  assert.deepEqual(await walk(gw, 'resources/templates/list', 'resourceTemplates', 'uriTemplate'), [['fixture://alpha/items/{id}', 'fixture://beta/items/{id}']])
  const { sessionId } = await rawInitialize(gw.url)
  for (const method of ['prompts/list', 'resources/list', 'resources/templates/list']) {
    assert.equal((await rpc(gw, sessionId, method, { cursor: 'not-a-cursor' })).error?.code, -32602, method)
  }
  const { client } = await downstream(t, gw)
  assert.equal((await client.listPrompts()).prompts.length, 4, 'the SDK client walks the pages too')
})

test('resources and templates of every upstream are listed with their URIs and definitions untouched', async (t) => {
  const alpha = await upstream(t, 'alpha')
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [beta.entry, alpha.entry])
  const { client } = await downstream(t, gw)
  const direct = [await directClient(t, alpha.fixture.url), await directClient(t, beta.fixture.url)]
  const byUri = (a: { uri: string }, b: { uri: string }): number => a.uri < b.uri ? -1 : 1
  const expected = (await Promise.all(direct.map(async c => (await c.listResources()).resources))).flat().sort(byUri)
  assert.deepEqual((await client.listResources()).resources, expected)
  const templates = (await Promise.all(direct.map(async c => (await c.listResourceTemplates()).resourceTemplates))).flat()
  assert.deepEqual((await client.listResourceTemplates()).resourceTemplates, templates)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_catalog_items', { kind: 'resources' }), 4)
  assert.equal(metricValue(metrics, 'switchboard_catalog_items', { kind: 'resource_templates' }), 2)
  assert.equal(metricValue(metrics, 'switchboard_catalog_items', { kind: 'prompts' }), 4)
  assert.equal(metricValue(metrics, 'switchboard_catalog_resource_collisions'), 0)
})

test('resources/read is routed by listed URI, then by template; an unknown URI is -32002 with its uri', async (t) => {
  const alpha = await upstream(t, 'alpha')
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [alpha.entry, beta.entry])
  const { client } = await downstream(t, gw)
  assert.equal(await readText(client, 'fixture://alpha/hello'), 'hello from alpha')
  assert.equal(await readText(client, 'fixture://beta/hello'), 'hello from beta')
  assert.deepEqual((await client.readResource({ uri: 'fixture://beta/blob' })).contents, [
    { uri: 'fixture://beta/blob', mimeType: 'application/octet-stream', blob: BLOB_BASE64 }
  ])
  assert.equal(await readText(client, 'fixture://beta/items/7'), 'item 7 from beta')
  assert.equal(await readText(client, 'fixture://alpha/items/42'), 'item 42 from alpha')
  const { sessionId } = await rawInitialize(gw.url)
  // A level-1 {id} never spans a '/', so the last one matches no template.
  for (const uri of ['fixture://gamma/hello', 'other://alpha/hello', 'fixture://beta/items/7/extra']) {
    const reply = await rpc(gw, sessionId, 'resources/read', { uri })
    assert.equal(reply.error?.code, -32002, uri)
    assert.deepEqual(reply.error?.data, { uri })
  }
  assert.equal(await forwarded(gw, 'beta', 'resources/read'), 3)
  assert.equal(await forwarded(gw, 'alpha', 'resources/read'), 2)
})

test('a URI offered by two upstreams is served by the first in config order, logged and counted', async (t) => {
  const alpha = await upstream(t, 'alpha', { sharedUris: true })
  // beta hides its blob, so exactly one URI (fixture://shared/hello) collides.
  const beta = await upstream(t, 'beta', { sharedUris: true }, { resources: { exclude: ['fixture://shared/blob'] } })
  for (const [first, second] of [['alpha', 'beta'], ['beta', 'alpha']] as const) {
    const entries = { alpha: alpha.entry, beta: beta.entry }
    const gw = await gateway(t, [entries[first], entries[second]])
    const { client } = await downstream(t, gw)
    const { resources } = await client.listResources()
    assert.deepEqual(resources.map(r => r.uri), ['fixture://shared/blob', 'fixture://shared/hello'])
    assert.equal(resources[1]?.description, `Greeting text from ${first}.`)
    assert.equal(await readText(client, 'fixture://shared/hello'), `hello from ${first}`)
    const line = gw.logs.find(l => /offered by two upstreams/.test(l.msg))
    assert.ok(line !== undefined, 'the collision is logged')
    assert.deepEqual([line.uri, line.servedBy, line.hiddenFrom], ['fixture://shared/hello', first, second])
    assert.equal(gw.logs.filter(l => /offered by two upstreams/.test(l.msg)).length, 1)
    assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_catalog_resource_collisions'), 1)
    await gw.close()
  }
})

test('resources/updated reaches only subscribed sessions, and a shared upstream is subscribed once per URI', async (t) => {
  const alpha = await upstream(t, 'alpha')
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [alpha.entry, beta.entry])
  const a = await downstream(t, gw)
  const b = await downstream(t, gw)
  const stats = alpha.fixture.state.stats
  await a.client.subscribeResource({ uri: 'fixture://alpha/hello' })
  await b.client.subscribeResource({ uri: 'fixture://alpha/blob' })
  assert.equal(stats.subscribes, 2)

  assert.equal(await touch(a.client, 'alpha', 'fixture://alpha/hello'), 1)
  await waitFor(() => a.updates.length === 1, 'A to get its update')
  // B's stream carries updates in order: once blob arrives, a wrongly relayed hello would be there first.
  await touch(a.client, 'alpha', 'fixture://alpha/blob')
  await waitFor(() => b.updates.length === 1, 'B to get its update')
  assert.deepEqual(b.updates, ['fixture://alpha/blob'])
  assert.deepEqual(a.updates, ['fixture://alpha/hello'])

  await b.client.subscribeResource({ uri: 'fixture://alpha/hello' })
  assert.equal(stats.subscribes, 2, 'the second session on the same URI is not subscribed upstream again')
  await a.client.unsubscribeResource({ uri: 'fixture://alpha/hello' })
  assert.equal(stats.unsubscribes, 0, 'B still wants it')
  assert.deepEqual(stats.subscribed, ['fixture://alpha/blob', 'fixture://alpha/hello'])
  await touch(b.client, 'alpha', 'fixture://alpha/hello')
  await waitFor(() => b.updates.length === 2, 'B to get the hello update')
  // A sentinel for A: a template-matched URI on the other upstream.
  await a.client.subscribeResource({ uri: 'fixture://beta/items/3' })
  assert.equal(beta.fixture.state.stats.subscribes, 1)
  await touch(a.client, 'beta', 'fixture://beta/items/3')
  await waitFor(() => a.updates.length === 2, 'A to get the sentinel')
  assert.deepEqual(a.updates, ['fixture://alpha/hello', 'fixture://beta/items/3'], 'nothing after A unsubscribed')

  await b.client.unsubscribeResource({ uri: 'fixture://alpha/hello' })
  assert.equal(stats.unsubscribes, 1, 'the last subscriber leaving unsubscribes upstream')
  assert.deepEqual(stats.subscribed, ['fixture://alpha/blob'])
  const { sessionId } = await rawInitialize(gw.url)
  const unknown = await rpc(gw, sessionId, 'resources/subscribe', { uri: 'fixture://gamma/x' })
  assert.equal(unknown.error?.code, -32002)
  assert.deepEqual(unknown.error?.data, { uri: 'fixture://gamma/x' })
})

test('a closing session releases its subscriptions upstream once nobody else holds them', async (t) => {
  const alpha = await upstream(t, 'alpha')
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [alpha.entry, beta.entry])
  const a = await downstream(t, gw)
  const b = await downstream(t, gw)
  const stats = alpha.fixture.state.stats
  await a.client.subscribeResource({ uri: 'fixture://alpha/hello' })
  await a.client.subscribeResource({ uri: 'fixture://alpha/items/5' })
  await b.client.subscribeResource({ uri: 'fixture://alpha/hello' })
  assert.equal(stats.subscribes, 2)
  await a.transport.terminateSession()
  await waitFor(() => stats.unsubscribes === 1, 'the URI only A held to be released')
  assert.deepEqual(stats.subscribed, ['fixture://alpha/hello'])
  await b.transport.terminateSession()
  await waitFor(() => stats.unsubscribes === 2, 'the last subscriber\'s session to release it')
  assert.deepEqual(stats.subscribed, [])
})

test('prompt and resource list changes of one upstream are relayed and the new items are served', async (t) => {
  const alpha = await upstream(t, 'alpha')
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [alpha.entry, beta.entry])
  const { client } = await downstream(t, gw)
  let prompts = 0
  let resources = 0
  client.setNotificationHandler('notifications/prompts/list_changed', () => { prompts++ })
  client.setNotificationHandler('notifications/resources/list_changed', () => { resources++ })
  await client.callTool({ name: 'alpha__add_prompt', arguments: { name: 'fresh' } })
  await waitFor(() => prompts >= 1, 'notifications/prompts/list_changed')
  assert.ok((await client.listPrompts()).prompts.some(p => p.name === 'alpha__fresh'))
  assert.equal(firstText(await client.getPrompt({ name: 'alpha__fresh' })), 'dynamic fresh')

  await client.callTool({ name: 'beta__add_resource', arguments: { uri: 'fixture://beta/extra' } })
  await waitFor(() => resources >= 1, 'notifications/resources/list_changed')
  assert.ok((await client.listResources()).resources.some(r => r.uri === 'fixture://beta/extra'))
  assert.equal(await readText(client, 'fixture://beta/extra'), 'dynamic fixture://beta/extra')

  await client.callTool({ name: 'alpha__remove_prompt', arguments: { name: 'fresh' } })
  await waitFor(() => prompts >= 2, 'a notification for the removal')
  assert.ok(!(await client.listPrompts()).prompts.some(p => p.name === 'alpha__fresh'))
})

test('a crashed upstream\'s prompts and resources stay listed while it restarts, and its subscriptions are re-applied', async (t) => {
  const stdio = fixtureCommand(['--name', 'alpha'])
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [{ name: 'alpha', transport: 'stdio', command: stdio.command, args: stdio.args }, beta.entry])
  const { client, updates } = await downstream(t, gw)
  await client.subscribeResource({ uri: 'fixture://alpha/hello' })
  assert.equal(await touch(client, 'alpha', 'fixture://alpha/hello'), 1)
  await waitFor(() => updates.length === 1, 'the first update')

  const prompts = (await client.listPrompts()).prompts.map(p => p.name)
  const resources = (await client.listResources()).resources.map(r => r.uri)
  const templates = (await client.listResourceTemplates()).resourceTemplates.map(r => r.uriTemplate)
  assert.ok(prompts.includes('alpha__greeting') && resources.includes('fixture://alpha/hello'))
  const crash = await client.callTool({ name: 'alpha__crash', arguments: {} })
  assert.equal(crash.isError, true)
  await waitFor(() => gw.gateway.pool.get('alpha')?.state !== 'ready', 'the crash to be noticed')
  assert.deepEqual((await client.listPrompts()).prompts.map(p => p.name), prompts)
  assert.deepEqual((await client.listResources()).resources.map(r => r.uri), resources)
  assert.deepEqual((await client.listResourceTemplates()).resourceTemplates.map(r => r.uriTemplate), templates)

  await waitFor(() => gw.gateway.pool.get('alpha')?.state === 'ready', 'alpha to be restarted', 15_000)
  assert.equal(await readText(client, 'fixture://alpha/hello'), 'hello from alpha')
  // The new process knows nothing of the old subscription unless the gateway re-applied it.
  await waitFor(async () => await touch(client, 'alpha', 'fixture://alpha/hello') === 1, 'the subscription to be re-applied')
  await waitFor(() => updates.length >= 2, 'an update from the restarted upstream')
  assert.ok(updates.every(u => u === 'fixture://alpha/hello'))
})

// Known gateway bug: with alpha down, resourceUpstream() falls back to "the only upstream that has
// resources" (beta), so alpha's URIs are routed to beta and the alpha subscription is never released.
test('subscribe and unsubscribe while the owning upstream is down never reach another upstream', async (t) => {
  const stdio = fixtureCommand(['--name', 'alpha'])
  const beta = await upstream(t, 'beta')
  const gw = await gateway(t, [{ name: 'alpha', transport: 'stdio', command: stdio.command, args: stdio.args }, beta.entry])
  const { client } = await downstream(t, gw)
  await client.subscribeResource({ uri: 'fixture://alpha/hello' })
  await client.subscribeResource({ uri: 'fixture://alpha/blob' })
  await client.callTool({ name: 'alpha__crash', arguments: {} })
  await waitFor(() => gw.gateway.pool.get('alpha')?.state !== 'ready', 'the crash to be noticed')
  await client.unsubscribeResource({ uri: 'fixture://alpha/hello' }).catch(() => {})
  await client.subscribeResource({ uri: 'fixture://alpha/items/9' }).catch(() => {})
  await waitFor(() => gw.gateway.pool.get('alpha')?.state === 'ready', 'alpha to be restarted', 15_000)
  // Re-subscriptions go out in subscription order on one connection: once blob's is in, hello's would be too.
  await waitFor(async () => await touch(client, 'alpha', 'fixture://alpha/blob') === 1, 'blob to be re-subscribed')
  assert.equal(beta.fixture.state.stats.subscribes, 0, 'alpha\'s URI was not subscribed on beta')
  assert.equal(await touch(client, 'alpha', 'fixture://alpha/hello'), 0, 'a URI the client left is not re-subscribed')
})
