/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00', carol: 'carol-key-0123456789abcdef' }
const ENV = { ...process.env, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob, CAROL_KEY: KEYS.carol }

interface Caller { client: Client, changes: { tools: number } }

/** Devs see web's tools but not its admin ones; ops see only whoami; carol (no role) sees what the default allows. */
async function gateway (t: TestContext, policies: unknown, catalog: Record<string, unknown> = {}): Promise<RunningGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    catalog: { listChangedDebounceMs: 20, ...catalog },
    auth: {
      apiKeys: [
        { id: 'alice', key: '${ALICE_KEY}', roles: ['dev'] },
        { id: 'bob', key: '${BOB_KEY}', roles: ['ops'] },
        { id: 'carol', key: '${CAROL_KEY}' }
      ]
    },
    policies
  }), ENV)
  await waitReady(gw)
  return gw
}

async function caller (t: TestContext, gw: RunningGateway, who: keyof typeof KEYS): Promise<Caller> {
  const client = new Client({ name: who, version: '1' })
  const changes = { tools: 0 }
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes.tools++ })
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${KEYS[who]}` } } })
  await client.connect(transport)
  t.after(async () => { await client.close().catch(() => {}) })
  await waitFor(() => gw.gateway.sessions.peek(transport.sessionId ?? '')?.hasStream, `${who}'s GET stream`)
  return { client, changes }
}

async function allTools (client: Client): Promise<string[]> {
  const names: string[] = []
  let cursor: string | undefined
  for (let page = 0; page < 50; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor })
    names.push(...result.tools.map(tool => tool.name))
    cursor = result.nextCursor
    if (cursor === undefined) return names
  }
  throw new Error('more than 50 pages')
}

async function callError (client: Client, name: string): Promise<{ code: number, message: string }> {
  try {
    await client.callTool({ name, arguments: {} })
  } catch (err: unknown) {
    const e = err as { code: number, message: string }
    return { code: e.code, message: e.message }
  }
  assert.fail(`${name} was called`)
}

const TOOL_RULES = {
  default: 'deny',
  rules: [
    { principals: ['*'], tools: ['web__crash', 'web__stall'], effect: 'deny' },
    { principals: ['role:dev'], tools: ['web__*'], effect: 'allow' },
    { principals: ['role:ops', 'carol'], tools: ['web__whoami'], effect: 'allow' }
  ]
}

test('each principal lists only the tools its rules allow, across every page', async (t) => {
  const gw = await gateway(t, TOOL_RULES, { pageSize: 3 })
  const alice = await allTools((await caller(t, gw, 'alice')).client)
  const bob = await allTools((await caller(t, gw, 'bob')).client)
  assert.ok(alice.length > 5, `alice sees web's tools: ${alice.join(', ')}`)
  assert.ok(alice.includes('web__echo') && alice.includes('web__whoami'))
  assert.ok(!alice.includes('web__crash') && !alice.includes('web__stall'), 'the deny rule comes first')
  assert.deepEqual(bob, ['web__whoami'])
})

test('a hidden tool is answered exactly like a missing one, and the denial is counted by upstream and tool only', async (t) => {
  const gw = await gateway(t, TOOL_RULES)
  const bob = await caller(t, gw, 'bob')
  const hidden = await callError(bob.client, 'web__echo')
  const missing = await callError(bob.client, 'web__no_such_tool')
  assert.equal(hidden.code, -32602)
  assert.equal(missing.code, -32602)
  assert.equal(hidden.message.replace('web__echo', 'X'), missing.message.replace('web__no_such_tool', 'X'))
  const allowed = await bob.client.callTool({ name: 'web__whoami', arguments: {} })
  assert.notEqual(allowed.isError, true)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_policy_denials_total', { kind: 'tools', upstream: 'web', name: 'web__echo' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_policy_denials_total', { name: 'web__no_such_tool' }), undefined, 'a missing tool is not a denial')
  // The per-call series cannot tell the two apart either.
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: '', tool: '', outcome: 'denied' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: '', tool: '', outcome: 'unknown_tool' }), 1)
  for (const line of metrics.split('\n')) assert.doesNotMatch(line, /principal=|bob|alice/, line)
  const audit = gw.logs.filter(l => l.component === 'audit' && l.principal === 'bob')
  assert.deepEqual(audit.map(l => [l.tool, l.upstream, l.outcome]), [['web__echo', 'web', 'denied'], ['web__no_such_tool', '', 'unknown_tool'], ['web__whoami', 'web', 'ok']])
})

test('prompts and resources follow the same decision: hidden from lists, refused like missing ones', async (t) => {
  const gw = await gateway(t, {
    default: 'allow',
    rules: [
      { principals: ['role:ops'], prompts: ['web__greeting'], resources: ['fixture://web/items/*', 'fixture://web/blob'], effect: 'deny' }
    ]
  })
  const alice = (await caller(t, gw, 'alice')).client
  const bob = (await caller(t, gw, 'bob')).client
  assert.deepEqual((await alice.listPrompts()).prompts.map(p => p.name).sort(), ['web__greeting', 'web__plain'])
  assert.deepEqual((await bob.listPrompts()).prompts.map(p => p.name), ['web__plain'])
  assert.deepEqual((await alice.listResources()).resources.map(r => r.uri).sort(), ['fixture://web/blob', 'fixture://web/hello'])
  assert.deepEqual((await bob.listResources()).resources.map(r => r.uri), ['fixture://web/hello'])
  assert.deepEqual((await alice.listResourceTemplates()).resourceTemplates.map(r => r.uriTemplate), ['fixture://web/items/{id}'])
  assert.deepEqual((await bob.listResourceTemplates()).resourceTemplates, [])

  await assert.rejects(bob.getPrompt({ name: 'web__greeting', arguments: { name: 'x' } }), (err: { code: number, message: string }) => err.code === -32602 && /Unknown prompt: web__greeting/.test(err.message))
  // The SDK client reports the wire's -32002 as -32602 (2026-07-28 numbering); the raw test below checks the wire.
  const notFound = (err: { code: number, message: string }): boolean => [-32002, -32602].includes(err.code) && /Resource not found/.test(err.message)
  await assert.rejects(bob.readResource({ uri: 'fixture://web/items/1' }), notFound)
  await assert.rejects(bob.readResource({ uri: 'fixture://web/blob' }), notFound)
  await assert.rejects(bob.subscribeResource({ uri: 'fixture://web/blob' }), notFound)
  await assert.rejects(bob.complete({ ref: { type: 'ref/prompt', name: 'web__greeting' }, argument: { name: 'name', value: 'a' } }), (err: { code: number }) => err.code === -32602)
  assert.ok((await alice.readResource({ uri: 'fixture://web/items/1' })).contents.length > 0)
  assert.ok((await bob.readResource({ uri: 'fixture://web/hello' })).contents.length > 0)
  assert.ok((await alice.getPrompt({ name: 'web__greeting', arguments: { name: 'x' } })).messages.length > 0)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_policy_denials_total', { kind: 'prompts', upstream: 'web', name: 'web__greeting' }), 2)
  assert.equal(metricValue(metrics, 'switchboard_policy_denials_total', { kind: 'resources', upstream: 'web', name: '' }), 3, 'no URI in a label')
})

test('on the wire, a hidden resource is the same -32002 as a missing one', async (t) => {
  const gw = await gateway(t, { default: 'allow', rules: [{ principals: ['role:ops'], resources: ['fixture://web/blob'], effect: 'deny' }] })
  const auth = { authorization: `Bearer ${KEYS.bob}` }
  const { sessionId } = await rawInitialize(gw.url, '2025-11-25', auth)
  const read = async (uri: string): Promise<{ code: number, message: string, data?: unknown }> => {
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 2, method: 'resources/read', params: { uri } }, { ...auth, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })
    return ((await res.json()) as { error: { code: number, message: string, data?: unknown } }).error
  }
  const hidden = await read('fixture://web/blob')
  const missing = await read('fixture://nowhere/blob')
  assert.deepEqual(hidden, { code: -32002, message: 'Resource not found: fixture://web/blob', data: { uri: 'fixture://web/blob' } })
  assert.deepEqual(missing, { code: -32002, message: 'Resource not found: fixture://nowhere/blob', data: { uri: 'fixture://nowhere/blob' } })
})

test('a catalog change is announced only to sessions whose visible list changed', async (t) => {
  const gw = await gateway(t, {
    default: 'deny',
    rules: [
      { principals: ['role:dev'], tools: ['web__*'], effect: 'allow' },
      { principals: ['role:ops'], tools: ['web__whoami'], prompts: ['web__*'], effect: 'allow' }
    ]
  })
  const alice = await caller(t, gw, 'alice')
  const bob = await caller(t, gw, 'bob')
  let bobsPromptChanges = 0
  bob.client.setNotificationHandler('notifications/prompts/list_changed', () => { bobsPromptChanges++ })
  await allTools(alice.client)
  await allTools(bob.client)
  await alice.client.callTool({ name: 'web__add_tool', arguments: { name: 'fresh' } })
  await waitFor(() => alice.changes.tools >= 1, 'alice\'s tools/list_changed')
  assert.ok((await allTools(alice.client)).includes('web__fresh'))
  // Bob's view (web__whoami alone) did not change. A later change he does see (a prompt) comes down
  // his stream after anything the tool change sent him: once it is here, so would a stray be.
  await alice.client.callTool({ name: 'web__add_prompt', arguments: { name: 'marker' } })
  await waitFor(() => bobsPromptChanges >= 1, 'bob\'s prompts/list_changed')
  assert.equal(bob.changes.tools, 0)
})
