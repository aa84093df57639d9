import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { closestKey, editDistance, knownKeysAt } from '../../../src/config/config-issues.ts'
import { configSchema } from '../../../src/config/schema.ts'

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and adjacent transpositions as one edit each', () => {
    assert.equal(editDistance('upstreams', 'upstreams'), 0)
    assert.equal(editDistance('upstream', 'upstreams'), 1)
    assert.equal(editDistance('hots', 'host'), 1)
    assert.equal(editDistance('prot', 'port'), 1)
    assert.equal(editDistance('timeout', 'timeoutMs'), 2)
    assert.equal(editDistance('', 'abc'), 3)
    assert.equal(editDistance('kitten', 'sitting'), 3)
  })
})

describe('closestKey', () => {
  const upstream = knownKeysAt(configSchema, ['upstreams', 0]) ?? []

  it('ignores case and allows about 2 edits per 5 characters of the unknown key', () => {
    assert.equal(closestKey('timeoutMS', upstream), 'timeoutMs')
    assert.equal(closestKey('TRANSPORT', upstream), 'transport')
    assert.equal(closestKey('comand', upstream), 'command')
    assert.equal(closestKey('timeout', upstream), 'timeoutMs')
    assert.equal(closestKey('ur', upstream), 'url')
  })

  it('suggests nothing when no key is close enough', () => {
    assert.equal(closestKey('bogus', upstream), undefined)
    assert.equal(closestKey('port', upstream), undefined)
    assert.equal(closestKey('x', ['y', 'zz']), 'y', 'one edit is always close enough')
    assert.equal(closestKey('ab', ['yz']), undefined)
  })

  it('prefers the closest key, then the first in the schema', () => {
    assert.equal(closestKey('args', ['arg', 'args']), 'args')
    assert.equal(closestKey('ab', ['ac', 'ad']), 'ac')
  })
})

describe('knownKeysAt', () => {
  it('follows objects, arrays, records and defaults to the keys of the object at a path', () => {
    assert.ok(knownKeysAt(configSchema, [])?.includes('upstreams'))
    assert.deepEqual(knownKeysAt(configSchema, ['listen']), ['host', 'port', 'allowUnauthenticated'])
    assert.deepEqual(knownKeysAt(configSchema, ['upstreams', 3, 'tools']), ['include', 'exclude', 'rename', 'timeoutMs'])
    assert.ok(knownKeysAt(configSchema, ['auth', 'apiKeys', 0])?.includes('roles'))
  })

  it('is undefined where the path leaves the known objects', () => {
    assert.equal(knownKeysAt(configSchema, ['nope']), undefined)
    assert.equal(knownKeysAt(configSchema, ['upstreams', 0, 'env']), undefined)
    assert.equal(knownKeysAt(configSchema, ['upstreams', 'x']), undefined)
  })
})
