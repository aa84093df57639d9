import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { decodeCursor, encodeCursor } from '../../../src/catalog/cursor.ts'
import { RPC, RpcError } from '../../../src/protocol/json-rpc.ts'

function rawCursor (payload: unknown): string {
  return Buffer.from(JSON.stringify(payload)).toString('base64url')
}

function assertInvalidCursor (cursor: string): void {
  assert.throws(() => decodeCursor(cursor), (err: unknown) => {
    assert.ok(err instanceof RpcError, `expected RpcError, got ${String(err)}`)
    assert.equal(err.code, -32602)
    assert.equal(err.code, RPC.INVALID_PARAMS)
    return true
  }, `cursor ${JSON.stringify(cursor)} should be rejected`)
}

describe('cursor', () => {
  it('decodes to the name it was encoded from', () => {
    for (const name of ['github__search', 'a', '', 'search_h8j1sf', 'quote"and\\backslash', 'unicode-検索-é', 'x'.repeat(500)]) {
      assert.equal(decodeCursor(encodeCursor(name)), name)
    }
  })

  it('is opaque URL-safe text', () => {
    const cursor = encodeCursor('github__search/with spaces')
    assert.match(cursor, /^[A-Za-z0-9_-]+$/)
    assert.ok(!cursor.includes('github'), 'the name is not readable in the cursor')
  })

  it('is the same for the same name every time', () => {
    assert.equal(encodeCursor('memory__read_graph'), encodeCursor('memory__read_graph'))
    assert.notEqual(encodeCursor('memory__read_graph'), encodeCursor('memory__read_graph2'))
  })

  it('rejects an empty string', () => {
    assertInvalidCursor('')
  })

  it('rejects garbage', () => {
    for (const garbage of ['not a cursor', '%%%', '!!!!', '12345', 'null', '[1,"a"]', 'eyJ']) assertInvalidCursor(garbage)
  })

  it('rejects a cursor that was tampered with', () => {
    const cursor = encodeCursor('github__search')
    assertInvalidCursor('X' + cursor.slice(1))
    assertInvalidCursor(cursor.slice(0, -2))
    assertInvalidCursor(cursor.slice(2))
    assertInvalidCursor(cursor + 'A')
  })

  it('rejects a cursor from another version', () => {
    assertInvalidCursor(rawCursor([2, 'github__search']))
    assertInvalidCursor(rawCursor([0, 'github__search']))
    assertInvalidCursor(rawCursor(['1', 'github__search']))
  })

  it('rejects a well-formed payload of the wrong shape', () => {
    assertInvalidCursor(rawCursor([1]))
    assertInvalidCursor(rawCursor([1, 'a', 'extra']))
    assertInvalidCursor(rawCursor([1, 42]))
    assertInvalidCursor(rawCursor([1, null]))
    assertInvalidCursor(rawCursor({ v: 1, after: 'a' }))
    assertInvalidCursor(rawCursor('a'))
    assertInvalidCursor(rawCursor(null))
  })

  it('carries the offending cursor in the error data', () => {
    try {
      decodeCursor('bogus')
      assert.fail('should have thrown')
    } catch (err: unknown) {
      assert.ok(err instanceof RpcError)
      assert.deepEqual(err.data, { cursor: 'bogus' })
      assert.match(err.message, /cursor/i)
    }
  })

  it('rejects a cursor with characters outside the base64url alphabet inserted', () => {
    const cursor = encodeCursor('github__search')
    assertInvalidCursor(cursor + '!')
    assertInvalidCursor(cursor.slice(0, 3) + '.' + cursor.slice(3))
  })
})
