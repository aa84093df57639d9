import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { pino } from 'pino'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'
import { rawJsonOf } from '../../../src/protocol/raw-result.ts'
import { RpcPeer } from '../../../src/upstream/rpc-peer.ts'
import { StdioTransport } from '../../../src/upstream/stdio-transport.ts'

// A child that answers request 1 in two halves: the first at once (and says so on stderr), the rest
// only once it hears that request 1 was cancelled; request 2 it answers whole.
const CHILD = `
const rl = require('node:readline').createInterface({ input: process.stdin })
rl.on('line', (line) => {
  const m = JSON.parse(line)
  if (m.id === 1) { process.stdout.write('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"first half '); process.stderr.write('half written\\n') }
  if (m.method === 'notifications/cancelled') process.stdout.write('and the rest"}]}}\\n')
  if (m.id === 2) process.stdout.write('{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"caf\\\\u00e9"}]}}\\n')
})
rl.on('close', () => process.exit(0))
`

test('a call cancelled while its result is half written is rejected; the rest of that answer is dropped quietly and the next answer is relayed whole', async (t) => {
  const lines: string[] = []
  const sink = new Writable({ write (chunk: Buffer, _enc, done) { lines.push(chunk.toString('utf8')); done() } })
  const transport = new StdioTransport({ command: process.execPath, args: ['-e', CHILD], env: {}, killAfterMs: 1000, log: pino({ level: 'info' }, sink), baseEnv: process.env })
  const peer = new RpcPeer(transport)
  const protocolErrors: Error[] = []
  peer.onProtocolError = (err) => { protocolErrors.push(err) }
  t.after(async () => { await peer.close() })
  await peer.start()

  const signal = new CallSignal()
  const first = peer.request('tools/call', { name: 'x' }, { raw: true, signal })
  const rejected = assert.rejects(first)
  const deadline = Date.now() + 10_000
  while (!lines.some(l => l.includes('half written')) && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
  assert.ok(lines.some(l => l.includes('half written')), 'the child wrote the first half')
  signal.abort(new Error('the client cancelled'))
  await rejected

  const second = await peer.request('tools/call', { name: 'y' }, { raw: true })
  assert.equal(rawJsonOf(second), '{"content":[{"type":"text","text":"caf\\u00e9"}]}')
  assert.deepEqual(protocolErrors, [])
})
