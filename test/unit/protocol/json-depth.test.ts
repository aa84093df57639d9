import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { exceedsJsonDepth } from '../../../src/protocol/json-depth.ts'

/** `depth` objects inside one another, the innermost holding `inner`. */
function nested (depth: number, inner = '1'): string {
  return '{"a":'.repeat(depth) + inner + '}'.repeat(depth)
}

/** The nesting depth of a parsed value, counted without recursion. */
function depthOf (value: unknown): number {
  let max = 0
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, d] = stack.pop() as [unknown, number]
    if (typeof v !== 'object' || v === null) continue
    max = Math.max(max, d + 1)
    for (const child of Object.values(v)) stack.push([child, d + 1])
  }
  return max
}

describe('exceedsJsonDepth', () => {
  it('accepts a text nested exactly to the limit and refuses one level more', () => {
    assert.equal(exceedsJsonDepth(nested(64), 64), false)
    assert.equal(exceedsJsonDepth(nested(65), 64), true)
    assert.equal(exceedsJsonDepth('['.repeat(64) + ']'.repeat(64), 64), false)
    assert.equal(exceedsJsonDepth('['.repeat(65) + ']'.repeat(65), 64), true)
    assert.equal(exceedsJsonDepth('{"a":[{"b":[1]}]}', 4), false)
    assert.equal(exceedsJsonDepth('{"a":[{"b":[1]}]}', 3), true)
  })

  it('counts siblings once: depth is nesting, not the number of brackets', () => {
    const wide = `[${Array.from({ length: 1000 }, () => '{"x":[1]}').join(',')}]`
    assert.equal(exceedsJsonDepth(wide, 3), false)
    assert.equal(exceedsJsonDepth(wide, 2), true)
  })

  it('ignores brackets inside strings, escaped quotes and backslashes included', () => {
    const bait = '[[[[[[[[[[{{{{{{{{{{'
    assert.equal(exceedsJsonDepth(JSON.stringify({ a: bait }), 1), false)
    assert.equal(exceedsJsonDepth(JSON.stringify({ a: `say \\"${bait}\\"` }), 1), false)
    assert.equal(exceedsJsonDepth(JSON.stringify({ a: 'ends in a backslash \\', b: bait }), 1), false)
    assert.equal(exceedsJsonDepth(JSON.stringify({ [bait]: `"${bait}"` }), 1), false)
    assert.equal(exceedsJsonDepth('{"a\\\\":[[1]]}', 2), true, 'an escaped backslash ends before the closing quote')
    assert.equal(exceedsJsonDepth('{"\\u005b":1}', 1), false)
  })

  it('refuses a 6,000-deep value anywhere in a message at the default limit', () => {
    const message = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"deep":${nested(6000)}}}}`
    assert.equal(exceedsJsonDepth(message, 64), true)
    assert.equal(exceedsJsonDepth(message, 6003), false)
    assert.equal(exceedsJsonDepth(message, 6002), true)
  })

  it('agrees with the depth of the parsed value for any JSON (property)', () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 14 }), (value, limit) => {
      const text = JSON.stringify(value)
      assert.equal(exceedsJsonDepth(text, limit), depthOf(value) > limit)
    }), { numRuns: 500 })
  })
})
