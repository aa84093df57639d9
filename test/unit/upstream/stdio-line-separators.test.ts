import { test } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { RpcPeer } from '../../../src/upstream/rpc-peer.ts'
import { StdioTransport } from '../../../src/upstream/stdio-transport.ts'

// A server that reads its stdin as Node's readline does from Node 24 on: a line also ends at U+2028
// and U+2029. It answers each line with the raw line it got.
const CHILD = `
let pending = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => {
  const lines = (pending + chunk).split(/\\r?\\n|\\u2028|\\u2029/)
  pending = lines.pop()
  for (const line of lines) {
    let id = null
    try { id = JSON.parse(line).id } catch { continue }
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, result: { line } }) + '\\n')
  }
})
`

test('a request holding U+2028 or U+2029 reaches a stdio server as one line, the same JSON value', async (t) => {
  const peer = new RpcPeer(new StdioTransport({ command: process.execPath, args: ['-e', CHILD], env: {}, killAfterMs: 1000, log: pino({ level: 'silent' }), baseEnv: process.env }))
  t.after(async () => { await peer.close() })
  await peer.start()
  const text = 'before\u2028between\u2029after'
  const result = await peer.request('echo', { text }, { timeoutMs: 5000 })
  const line = result.line as string
  assert.equal(line.includes('\u2028') || line.includes('\u2029'), false, line)
  assert.deepEqual(JSON.parse(line).params, { text })
})
