import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Subscriptions } from '../../../src/gateway/subscriptions.ts'

describe('Subscriptions', () => {
  it('reports the first subscriber and the last one leaving, per upstream and URI', () => {
    const subs = new Subscriptions()
    assert.equal(subs.add('up', 'r://1', 's1'), true)
    assert.equal(subs.add('up', 'r://1', 's2'), false)
    assert.equal(subs.add('other', 'r://1', 's1'), true, 'another upstream is another subscription')
    assert.deepEqual([...subs.subscribers('up', 'r://1')].sort(), ['s1', 's2'])
    assert.equal(subs.remove('up', 'r://1', 's1'), false)
    assert.equal(subs.remove('up', 'r://1', 's1'), false, 'removing twice is harmless')
    assert.equal(subs.remove('up', 'r://1', 's2'), true)
    assert.deepEqual([...subs.subscribers('up', 'r://1')], [])
  })

  it('forgets a closed session and returns what nobody watches any more', () => {
    const subs = new Subscriptions()
    subs.add('a', 'r://1', 's1')
    subs.add('a', 'r://2', 's1')
    subs.add('a', 'r://2', 's2')
    subs.add('b', 'r://3', 's1')
    assert.deepEqual(subs.removeSession('s1'), [{ upstream: 'a', uri: 'r://1' }, { upstream: 'b', uri: 'r://3' }])
    assert.deepEqual(subs.uris('a'), ['r://2'])
    assert.deepEqual(subs.uris('a', 's1'), [])
    assert.deepEqual(subs.uris('a', 's2'), ['r://2'])
  })

  it('counts every session of an upstream that gives each its own connection as a first subscriber, so each is subscribed (or refused) on its own', () => {
    const subs = new Subscriptions(upstream => upstream === 'own')
    assert.equal(subs.add('own', 'r://1', 's1'), true)
    assert.equal(subs.add('own', 'r://1', 's2'), true)
    assert.equal(subs.add('shared', 'r://1', 's1'), true)
    assert.equal(subs.add('shared', 'r://1', 's2'), false)
    assert.deepEqual([...subs.subscribers('own', 'r://1')].sort(), ['s1', 's2'])
  })
})
