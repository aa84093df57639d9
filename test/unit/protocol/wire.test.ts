import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { rpcError, rpcResult, type JsonRpcMessage } from '../../../src/protocol/json-rpc.ts'
import { messageJson, withOwnJson } from '../../../src/protocol/wire.ts'

describe('messageJson', () => {
  it('is JSON.stringify for every kind of message', () => {
    const messages: JsonRpcMessage[] = [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'a', arguments: { x: [1, 'two'] } } },
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } },
      rpcResult('id-"quoted"', { content: [{ type: 'text', text: 'é\n' }] }),
      rpcError(7, -32602, 'Unknown tool: x', { name: 'x' }),
      rpcError(null, -32700, 'Parse error')
    ]
    for (const m of messages) assert.equal(messageJson(m), JSON.stringify(m))
  })

  it('wraps a result that carries its own JSON without serializing it again, with any id', () => {
    const page = withOwnJson({ tools: [{ name: 'a__echo', inputSchema: { type: 'object' } }], nextCursor: 'abc' })
    for (const id of [1, 0, 'x', 'with "quotes" and \\ backslash', 'ü']) {
      const message = rpcResult(id, page)
      const text = messageJson(message)
      assert.equal(text, JSON.stringify(message))
      assert.deepEqual(JSON.parse(text), { jsonrpc: '2.0', id, result: { tools: [{ name: 'a__echo', inputSchema: { type: 'object' } }], nextCursor: 'abc' } })
    }
  })

  it('uses the text kept when the result was built: such a result is frozen, so the two cannot differ', () => {
    const page = withOwnJson({ tools: [] as unknown[] }) as { tools: unknown[], extra?: number }
    assert.ok(Object.isFrozen(page))
    assert.throws(() => { page.extra = 1 }, TypeError)
    // The kept text is invisible to every other serializer, which sees the same fields.
    assert.deepEqual(Object.keys(page), ['tools'])
    assert.equal(JSON.stringify(page), '{"tools":[]}')
  })
})

describe('messageJson of a message that cannot be written', () => {
  let deep: Record<string, unknown> = {}
  for (let i = 0; i < 20_000; i++) deep = { a: deep }

  it('answers the same request with an error instead of throwing', () => {
    const text = messageJson(rpcResult(7, { content: [], deep }))
    assert.deepEqual(JSON.parse(text), { jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'Internal error: the answer could not be written as JSON (nested too deeply, or holding a value JSON cannot carry)' } })
  })

  it('replaces a notification or request with a warning to the client', () => {
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    for (const m of [{ jsonrpc: '2.0', method: 'notifications/progress', params: { deep } }, { jsonrpc: '2.0', id: 3, method: 'sampling/createMessage', params: { cyclic } }] as JsonRpcMessage[]) {
      const parsed = JSON.parse(messageJson(m)) as { method: string, params: { level: string, data: string } }
      assert.equal(parsed.method, 'notifications/message')
      assert.equal(parsed.params.level, 'warning')
      assert.match(parsed.params.data, /was dropped/)
    }
  })
})
