import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SeenRecently } from '../../../src/gateway/seen-recently.ts'

test('the same parts are first once per window, and first again after it', () => {
  const seen = new SeenRecently(1000)
  assert.equal(seen.first(['web', 'hello'], 0), true)
  assert.equal(seen.first(['web', 'hello'], 999), false)
  assert.equal(seen.first(['web', 'other'], 999), true)
  assert.equal(seen.first(['web', 'hello'], 1000), true)
})

test('parts are kept apart: ["ab", "c"] is not ["a", "bc"]', () => {
  const seen = new SeenRecently(1000)
  assert.equal(seen.first(['ab', 'c'], 0), true)
  assert.equal(seen.first(['a', 'bc'], 0), true)
})

test('memory is bounded: beyond max the oldest entries go, even within the window', () => {
  const seen = new SeenRecently(60_000, 3)
  for (const n of [1, 2, 3, 4]) assert.equal(seen.first([String(n)], n), true)
  assert.equal(seen.first(['1'], 10), true, 'the oldest was dropped to stay within 3')
  assert.equal(seen.first(['4'], 10), false)
})
