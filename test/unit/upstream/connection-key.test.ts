import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Principal } from '../../../src/auth/principal.ts'
import { keyFor } from '../../../src/upstream/connection-key.ts'

const alice: Principal = { id: 'alice', roles: [], via: 'api-key' }
const bob: Principal = { id: 'bob', roles: [], via: 'api-key' }
const shared = { name: 'web', isolation: 'shared' } as const
const isolated = { name: 'web', isolation: 'session' } as const

test('a shared upstream has one connection whoever asks', () => {
  assert.equal(keyFor(shared), keyFor(shared, { id: 's1', principal: alice }))
  assert.equal(keyFor(shared, { id: 's1', principal: alice }), keyFor(shared, { id: 's2', principal: bob }))
})

test('a session-isolated upstream has one connection per session, apart from the one that lists', () => {
  const s1 = keyFor(isolated, { id: 's1', principal: alice })
  assert.equal(s1, keyFor(isolated, { id: 's1' }), 'the same session finds the same connection')
  assert.notEqual(s1, keyFor(isolated, { id: 's2', principal: alice }), 'another session of the same principal gets its own')
  assert.notEqual(s1, keyFor(isolated), 'the listing connection is not a session\'s')
  assert.equal(keyFor(isolated), keyFor(shared), 'an upstream\'s own connection is keyed by its name alone')
})

test('keys of two upstreams never collide, whatever the session id holds', () => {
  const a = keyFor({ name: 'a', isolation: 'session' }, { id: 'b' })
  const b = keyFor({ name: 'a-b', isolation: 'session' }, { id: '' })
  assert.notEqual(a, b)
  assert.notEqual(keyFor({ name: 'a', isolation: 'session' }, { id: '' }), keyFor({ name: 'a', isolation: 'shared' }))
})
