/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/client'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'
import { rpcErrorOf } from '../helpers/rpc-error.ts'

// search_tools and call_tool on a `discovery: search` endpoint, over the published reference
// servers (server-everything and server-memory, both npm dependencies) as real stdio upstreams.

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef00' }
const ENV = { ...process.env, ALICE_KEY: KEYS.alice, BOB_KEY: KEYS.bob }
type Who = keyof typeof KEYS

const EVERYTHING = { name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] }
const MEMORY = { name: 'memory', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-memory/dist/index.js'], env: { MEMORY_FILE_PATH: '/dev/null' } }

/** Queries an agent might send, each with the tool it should find among the first three. */
const RANKED: ReadonlyArray<[string, string]> = [
  ['echo back a message', 'everything__echo'],
  ['add two numbers', 'everything__get-sum'],
  ['environment variables', 'everything__get-env'],
  ['tiny image', 'everything__get-tiny-image'],
  ['compress a file with gzip', 'everything__gzip-file-as-resource'],
  ['long running operation with progress', 'everything__trigger-long-running-operation'],
  ['ask the user for input', 'everything__trigger-elicitation-request'],
  ['LLM sampling', 'everything__trigger-sampling-request'],
  ['turn logging on or off', 'everything__toggle-simulated-logging'],
  ['structured content', 'everything__get-structured-content'],
  ['links to resources', 'everything__get-resource-links'],
  ['deep research', 'everything__simulate-research-query'],
  ['create entities in the knowledge graph', 'memory__create_entities'],
  ['relate two entities', 'memory__create_relations'],
  ['delete relations', 'memory__delete_relations'],
  ['add observations to an entity', 'memory__add_observations'],
  ['search nodes', 'memory__search_nodes'],
  ['read the entire knowledge graph', 'memory__read_graph'],
  ['open nodes by name', 'memory__open_nodes'],
  ['remove an observation', 'memory__delete_observations']
]

async function gateway (t: TestContext, extra: Record<string, unknown> = {}): Promise<RunningGateway> {
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [EVERYTHING, MEMORY],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}', roles: ['dev'] }, { id: 'bob', key: '${BOB_KEY}', roles: ['ops'] }] },
    endpoints: [
      { name: 'finder', discovery: 'search' },
      { name: 'graph', discovery: 'search', upstreams: ['memory'], tools: { exclude: ['memory__delete_*'] } }
    ],
    pinning: { mode: 'off' },
    ...extra
  }), ENV)
  await waitReady(gw)
  return gw
}

async function as (t: TestContext, gw: RunningGateway, who: Who, endpoint?: string): Promise<Client> {
  return await connectClient(t, endpoint === undefined ? gw.url : `${gw.url}/${endpoint}`, {}, { authorization: `Bearer ${KEYS[who]}` })
}

interface Found { name: string, description?: string, inputSchema: Record<string, unknown> }
interface ToolResult { content: Array<{ type: string, text?: string }>, structuredContent?: { tools: Found[] }, isError?: boolean, _meta?: Record<string, unknown> }

async function search (client: Client, query: string, extra: Record<string, unknown> = {}): Promise<Found[]> {
  const result = await client.callTool({ name: 'search_tools', arguments: { query, ...extra } }) as ToolResult
  assert.notEqual(result.isError, true, JSON.stringify(result.content))
  const found = result.structuredContent?.tools
  assert.ok(Array.isArray(found))
  assert.deepEqual(JSON.parse(result.content[0]?.text ?? ''), result.structuredContent, 'the text block carries the same JSON')
  return found
}

test('search_tools finds the expected tool among the first three for every query of the fixed set', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const client = await as(t, gw, 'alice', 'finder')
  const { tools } = await client.listTools()
  assert.deepEqual(tools.map(tool => tool.name), ['search_tools', 'call_tool'])
  assert.ok(tools[0]?.outputSchema !== undefined, 'search_tools declares its output schema')
  const misses: string[] = []
  for (const [query, expected] of RANKED) {
    const top = (await search(client, query, { limit: 3 })).map(f => f.name)
    if (!top.includes(expected)) misses.push(`"${query}": expected ${expected}, got ${top.join(', ')}`)
  }
  assert.deepEqual(misses, [])
  const [first] = await search(client, 'echo', { limit: 1 })
  assert.equal(first?.name, 'everything__echo')
  assert.equal(typeof first?.description, 'string')
  assert.equal(first?.inputSchema.type, 'object')
  assert.deepEqual((await search(client, 'graph', { upstream: 'everything' })).map(f => f.name), [], 'upstream narrows the search')
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_tool_searches_total', { endpoint: 'finder' }), RANKED.length + 2)
})

test('search results never name a tool the policy hides or the endpoint leaves out', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t, { policies: { default: 'allow', rules: [{ principals: ['alice'], tools: ['everything__get-env', 'memory__delete_*'], effect: 'deny' }] } })
  const alice = await as(t, gw, 'alice', 'finder')
  const bob = await as(t, gw, 'bob', 'finder')
  const everyName = async (client: Client, query: string): Promise<string[]> => (await search(client, query, { limit: 50 })).map(f => f.name)
  assert.ok((await everyName(bob, 'environment variables')).includes('everything__get-env'))
  assert.ok(!(await everyName(alice, 'environment variables')).includes('everything__get-env'))
  const deletes = await everyName(alice, 'delete entities relations observations')
  assert.ok(deletes.length > 0 && deletes.every(n => !n.startsWith('memory__delete_')), deletes.join(', '))
  const graph = await everyName(await as(t, gw, 'bob', 'graph'), 'delete entities echo graph')
  assert.ok(graph.length > 0 && graph.every(n => n.startsWith('memory__') && !n.startsWith('memory__delete_')), graph.join(', '))
})

test('call_tool answers as a direct call does: results, policy denials, rate limits, audit', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t, {
    policies: { default: 'allow', rules: [{ principals: ['alice'], tools: ['everything__get-env'], effect: 'deny' }] },
    rateLimits: { rules: [{ principals: ['*'], tools: ['everything__get-sum'], key: 'principal+tool', limit: 1, windowMs: 60_000 }] }
  })
  const finder = await as(t, gw, 'alice', 'finder')
  const direct = await as(t, gw, 'alice')

  const echoed = await finder.callTool({ name: 'call_tool', arguments: { name: 'everything__echo', arguments: { message: 'hi' } } }) as ToolResult
  assert.deepEqual(echoed, await direct.callTool({ name: 'everything__echo', arguments: { message: 'hi' } }))

  const denied = await rpcErrorOf(finder.callTool({ name: 'call_tool', arguments: { name: 'everything__get-env', arguments: {} } }))
  assert.deepEqual(denied, await rpcErrorOf(direct.callTool({ name: 'everything__get-env', arguments: {} })))
  assert.equal(denied.code, -32602)
  const outside = await rpcErrorOf((await as(t, gw, 'alice', 'graph')).callTool({ name: 'call_tool', arguments: { name: 'everything__echo', arguments: { message: 'x' } } }))
  assert.deepEqual(outside, await rpcErrorOf(direct.callTool({ name: 'everything__nope', arguments: {} })).then(e => ({ ...e, message: e.message.replace('everything__nope', 'everything__echo') })))

  assert.notEqual((await finder.callTool({ name: 'call_tool', arguments: { name: 'everything__get-sum', arguments: { a: 1, b: 2 } } }) as ToolResult).isError, true)
  const limited = await finder.callTool({ name: 'call_tool', arguments: { name: 'everything__get-sum', arguments: { a: 1, b: 2 } } }) as ToolResult
  const limitedDirect = await direct.callTool({ name: 'everything__get-sum', arguments: { a: 1, b: 2 } }) as ToolResult
  assert.equal(limited.isError, true)
  assert.deepEqual((limited._meta?.['switchboard/error'] as { code: string }).code, 'SB_ERR_RATE_LIMITED')
  const withoutTime = (r: ToolResult): unknown => ({ ...r, content: r.content.map(c => ({ ...c, text: c.text?.replace(/Retry in .*$/, '') })), _meta: undefined })
  assert.deepEqual(withoutTime(limited), withoutTime(limitedDirect), 'one budget, one refusal, whichever way the tool is called')

  const audit = gw.logs.filter(l => l.component === 'audit' && l.endpoint === 'finder').map(l => [l.tool, l.outcome])
  assert.deepEqual(audit, [['everything__echo', 'ok'], ['everything__get-env', 'denied'], ['everything__get-sum', 'ok'], ['everything__get-sum', 'rate_limited']])
})

test('call_tool relays progress with the client\'s own token; bad arguments are said in the result', { timeout: 60_000 }, async (t) => {
  const gw = await gateway(t)
  const finder = await as(t, gw, 'alice', 'finder')
  const progress: number[] = []
  const result = await finder.callTool({ name: 'call_tool', arguments: { name: 'everything__trigger-long-running-operation', arguments: { duration: 0.2, steps: 2 } } }, { onprogress: (p) => { progress.push(p.progress) } }) as ToolResult
  assert.notEqual(result.isError, true)
  assert.deepEqual(progress, [1, 2])
  const noQuery = await finder.callTool({ name: 'search_tools', arguments: { limit: 3 } }) as ToolResult
  assert.equal(noQuery.isError, true)
  assert.match(noQuery.content[0]?.text ?? '', /needs a query/)
  const badLimit = await finder.callTool({ name: 'search_tools', arguments: { query: 'echo', limit: 500 } }) as ToolResult
  assert.equal(badLimit.isError, true)
  const noName = await finder.callTool({ name: 'call_tool', arguments: {} }) as ToolResult
  assert.equal(noName.isError, true)
})
