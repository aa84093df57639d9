// Findings of the fuzz tests (test/fuzz/), pinned down as plain regression tests against the
// fuzzing upstream (test/fixtures/fuzzing-upstream.ts), which answers as each call's plan says.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { rawInitialize, rawPost, startGateway, waitReady } from '../helpers/start-gateway.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/fuzzing-upstream.ts', import.meta.url))

test('an upstream error whose code is not an integer (1e400, 1.5) reaches the client as -32603 with its message, not as code null', async (t) => {
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'liar', transport: 'stdio', command: process.execPath, args: ['--import', import.meta.resolve('tsx'), FIXTURE] }]
  }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url)
  // Found by test/fuzz/upstream-replies.test.ts: 1e400 parses as Infinity, which JSON.stringify writes as null.
  for (const [n, code] of [[1, '1e400'], [2, '1.5'], [3, '-1e400']] as const) {
    const lines = [`{"jsonrpc":"2.0","id":__ID__,"error":{"code":${code},"message":"odd code ${code}"}}`]
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'liar__lie', arguments: { plan: { lines } } } }, { 'mcp-session-id': sessionId })
    assert.equal(res.status, 200)
    const body = await res.json() as { id: number, error?: { code: unknown, message: string } }
    assert.equal(body.id, n)
    assert.equal(body.error?.code, -32603, `code ${code}: ${JSON.stringify(body)}`)
    assert.match(body.error?.message ?? '', new RegExp(`odd code ${code.replace('.', '\\.')}`))
  }
  // An integer code still passes through as the upstream sent it.
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'liar__lie', arguments: { plan: { lines: ['{"jsonrpc":"2.0","id":__ID__,"error":{"code":-32042,"message":"url needed"}}'] } } } }, { 'mcp-session-id': sessionId })
  assert.deepEqual(((await res.json()) as { error: unknown }).error, { code: -32042, message: 'url needed' })
})
