import { test } from 'node:test'
import assert from 'node:assert/strict'
import { connectClient, startGateway, waitReady } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

const EVERYTHING = { name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'], isolation: 'session' }

test('isolation: session lists what a client with roots sees: server-everything\'s get-roots-list is there and answers with the client\'s own roots', { timeout: 60_000 }, async (t) => {
  const gw = await startGateway(t, JSON.stringify({ upstreams: [EVERYTHING] }))
  await waitReady(gw)
  assert.equal(gw.gateway.pool.get('everything')?.state, 'ready')
  const client = await connectClient(t, gw.url, { roots: { listChanged: true } })
  client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///work/project', name: 'project' }] }))
  const { tools } = await client.listTools()
  assert.ok(tools.some(tool => tool.name === 'everything__get-roots-list'), `listed: ${tools.map(tool => tool.name).join(', ')}`)
  const result = await client.callTool({ name: 'everything__get-roots-list', arguments: {} }) as ToolResult
  assert.notEqual(result.isError, true, result.content[0]?.text)
  assert.match(result.content.map(block => block.text ?? '').join('\n'), /file:\/\/\/work\/project/)
  const logs = gw.logs.filter(line => line.msg === 'upstream protocol error')
  assert.deepEqual(logs, [], 'the listing connection answered the roots request it got')
})
