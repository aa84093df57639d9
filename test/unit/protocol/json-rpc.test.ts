import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  RPC,
  RpcError,
  isNotification,
  isRecord,
  isRequest,
  isResponse,
  rpcError,
  rpcResult,
  validateMessage,
  type JsonRpcMessage
} from '../../../src/protocol/json-rpc.ts'

function valid (value: unknown): JsonRpcMessage {
  const message = validateMessage(value)
  assert.ok(message !== undefined, `expected ${JSON.stringify(value)} to be valid`)
  assert.equal(message, value, 'the message is returned as given, not copied')
  return message
}

function invalid (value: unknown): void {
  assert.equal(validateMessage(value), undefined, `expected ${JSON.stringify(value)} to be rejected`)
}

describe('validateMessage requests', () => {
  it('accepts requests with string and numeric ids', () => {
    for (const id of ['abc', '', 1, 0, -5, 1.5]) {
      const message = valid({ jsonrpc: '2.0', id, method: 'tools/list' })
      assert.ok(isRequest(message))
      assert.ok(!isNotification(message))
      assert.ok(!isResponse(message))
    }
  })

  it('accepts requests with object params', () => {
    valid({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', arguments: {} } })
    valid({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })
  })

  it('rejects a request with a null id', () => {
    invalid({ jsonrpc: '2.0', id: null, method: 'tools/list' })
  })

  it('rejects a request whose id is not a string or finite number', () => {
    for (const id of [true, {}, [1], Number.NaN, Number.POSITIVE_INFINITY, undefined]) invalid({ jsonrpc: '2.0', id, method: 'tools/list' })
  })

  it('rejects non-object params', () => {
    for (const params of [[1, 2], 'x', 3, null, true]) {
      invalid({ jsonrpc: '2.0', id: 1, method: 'tools/call', params })
      invalid({ jsonrpc: '2.0', method: 'notifications/progress', params })
    }
  })

  it('rejects a method that is not a string', () => {
    invalid({ jsonrpc: '2.0', id: 1, method: 42 })
    invalid({ jsonrpc: '2.0', id: 1, method: null })
  })
})

describe('validateMessage notifications', () => {
  it('accepts notifications with and without params', () => {
    for (const value of [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: {} } }
    ]) {
      const message = valid(value)
      assert.ok(isNotification(message))
      assert.ok(!isRequest(message))
      assert.ok(!isResponse(message))
    }
  })
})

describe('validateMessage responses', () => {
  it('accepts results with an object result', () => {
    for (const id of ['a', 7]) {
      const message = valid({ jsonrpc: '2.0', id, result: { tools: [] } })
      assert.ok(isResponse(message))
      assert.ok(!isRequest(message))
    }
    valid({ jsonrpc: '2.0', id: 1, result: {} })
  })

  it('rejects a result that is not an object', () => {
    for (const result of [null, [], 'ok', 1, true]) invalid({ jsonrpc: '2.0', id: 1, result })
  })

  it('rejects a result without a usable id', () => {
    invalid({ jsonrpc: '2.0', id: null, result: {} })
    invalid({ jsonrpc: '2.0', result: {} })
  })

  it('accepts errors with an id, a null id, no id, and data', () => {
    for (const value of [
      { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } },
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } },
      { jsonrpc: '2.0', error: { code: -32600, message: 'Invalid Request' } },
      { jsonrpc: '2.0', id: 'x', error: { code: -32000, message: 'boom', data: { detail: [1] } } }
    ]) {
      const message = valid(value)
      assert.ok(isResponse(message))
    }
  })

  it('rejects errors without a numeric code and string message', () => {
    for (const error of [null, 'boom', [], { code: '1', message: 'x' }, { code: 1 }, { message: 'x' }, { code: 1, message: 2 }]) {
      invalid({ jsonrpc: '2.0', id: 1, error })
    }
  })

  it('rejects an error whose id is neither a string, a number nor null', () => {
    invalid({ jsonrpc: '2.0', id: {}, error: { code: 1, message: 'x' } })
    invalid({ jsonrpc: '2.0', id: true, error: { code: 1, message: 'x' } })
  })
})

describe('validateMessage envelope', () => {
  it('rejects a wrong or missing jsonrpc version', () => {
    for (const jsonrpc of ['1.0', '2', 2, undefined, null]) invalid({ jsonrpc, id: 1, method: 'ping' })
    invalid({ id: 1, method: 'ping' })
  })

  it('rejects arrays, including batches', () => {
    invalid([])
    invalid([{ jsonrpc: '2.0', id: 1, method: 'ping' }])
  })

  it('rejects non-objects', () => {
    for (const value of [null, undefined, 'ping', 1, true]) invalid(value)
  })

  it('rejects an object that is neither a request, notification nor response', () => {
    invalid({ jsonrpc: '2.0', id: 1 })
    invalid({ jsonrpc: '2.0' })
  })
})

describe('json-rpc helpers', () => {
  it('tells records from arrays and null', () => {
    assert.equal(isRecord({}), true)
    assert.equal(isRecord([]), false)
    assert.equal(isRecord(null), false)
    assert.equal(isRecord('x'), false)
  })

  it('builds results and errors that validate', () => {
    assert.deepEqual(rpcResult(3, { ok: true }), { jsonrpc: '2.0', id: 3, result: { ok: true } })
    valid(rpcResult(3, { ok: true }))
    const withoutData = rpcError(null, RPC.PARSE_ERROR, 'Parse error')
    assert.deepEqual(withoutData, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } })
    assert.ok(!('data' in withoutData.error))
    assert.deepEqual(rpcError('a', RPC.INVALID_PARAMS, 'bad', { why: 1 }).error, { code: -32602, message: 'bad', data: { why: 1 } })
    valid(rpcError('a', RPC.INVALID_PARAMS, 'bad', { why: 1 }))
  })

  it('writes a code that is not an integer (a peer\'s 1.5, or 1e400 parsed as Infinity) as -32603, keeping the message', () => {
    for (const code of [1.5, Infinity, -Infinity, Number.NaN]) {
      assert.deepEqual(rpcError(7, code, 'odd', { x: 1 }).error, { code: -32603, message: 'odd', data: { x: 1 } })
    }
    assert.equal(rpcError(7, -32042, 'url').error.code, -32042)
  })

  it('uses the standard JSON-RPC error codes', () => {
    assert.deepEqual(RPC, {
      PARSE_ERROR: -32700,
      INVALID_REQUEST: -32600,
      METHOD_NOT_FOUND: -32601,
      INVALID_PARAMS: -32602,
      INTERNAL_ERROR: -32603,
      TRANSPORT_ERROR: -32000
    })
  })

  it('carries code, message and data on RpcError', () => {
    const err = new RpcError(RPC.METHOD_NOT_FOUND, 'no such method', { method: 'x' })
    assert.ok(err instanceof Error)
    assert.equal(err.name, 'RpcError')
    assert.equal(err.code, -32601)
    assert.equal(err.message, 'no such method')
    assert.deepEqual(err.data, { method: 'x' })
  })
})
