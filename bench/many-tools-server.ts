// A stdio MCP server with a big catalog, for the bench's tools/list section:
//   node --import tsx bench/many-tools-server.ts --count 10000 [--page-size 1000]
// Tools are tool_00000 … tool_<count-1>, each with a description and a small input schema (about
// the size of a real tool's entry); tools/list pages through them. tools/call echoes, so a catalog
// upstream is also a working one.
import { parseArgs } from 'node:util'
import { ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server'
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio'

const MAX_COUNT = 1_000_000

function positive (value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0 || n > MAX_COUNT) throw new Error(`--${name} must be an integer in 1..${MAX_COUNT}, got ${value}`)
  return n
}

const { values } = parseArgs({ options: { count: { type: 'string' }, 'page-size': { type: 'string' } } })
const count = positive(values.count, 'count', 1000)
const pageSize = positive(values['page-size'], 'page-size', 1000)
const width = String(count - 1).length

const tools = Array.from({ length: count }, (_, i) => ({
  name: `tool_${String(i).padStart(width, '0')}`,
  description: `Synthetic tool ${i} of ${count}: echoes its message back, for the catalog benchmark.`,
  inputSchema: {
    type: 'object' as const,
    properties: { message: { type: 'string', description: 'The text to echo back.' } },
    required: ['message']
  }
}))

const server = new Server({ name: 'many-tools', version: '1.0.0' }, { capabilities: { tools: {} } })

server.setRequestHandler('tools/list', (request) => {
  const cursor = request.params?.cursor
  const offset = cursor === undefined ? 0 : Number(cursor)
  if (!Number.isInteger(offset) || offset < 0 || offset > count) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor')
  const next = offset + pageSize
  return next < count ? { tools: tools.slice(offset, next), nextCursor: String(next) } : { tools: tools.slice(offset) }
})

server.setRequestHandler('tools/call', (request) => {
  const message = request.params.arguments?.message
  return { content: [{ type: 'text', text: `Echo: ${String(message)}` }] }
})

await server.connect(new StdioServerTransport())
