import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { RecentAnswers } from '../../../src/http/recent-answers.ts'

const answer = (id: string, text = 'done'): unknown => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } })

describe('RecentAnswers', () => {
  it('gives a stream\'s answer back in its own session only, as it was sent', () => {
    const recent = new RecentAnswers()
    recent.remember('s1', 'streamA', 'streamA.3', answer('c1'))
    assert.deepEqual(recent.get('s1', 'streamA'), { id: 'streamA.3', message: answer('c1') })
    assert.equal(recent.get('s2', 'streamA'), undefined)
    assert.equal(recent.get('s1', 'streamB'), undefined)
  })

  it('keeps no answer over its per-answer bound, and drops the oldest past its total bound', () => {
    const recent = new RecentAnswers({ maxBytes: 300, maxAnswerBytes: 200, ttlMs: 60_000 })
    recent.remember('s', 'big', 'big.1', answer('b', 'x'.repeat(500)))
    assert.equal(recent.get('s', 'big'), undefined)
    for (let i = 0; i < 5; i++) recent.remember('s', `st${i}`, `st${i}.1`, answer(`c${i}`))
    assert.equal(recent.get('s', 'st0'), undefined, 'the oldest went')
    assert.ok(recent.get('s', 'st4') !== undefined, 'the newest stays')
  })

  it('forgets an answer after its time', () => {
    const recent = new RecentAnswers({ maxBytes: 10_000, maxAnswerBytes: 1000, ttlMs: -1 })
    recent.remember('s', 'st', 'st.1', answer('c'))
    assert.equal(recent.get('s', 'st'), undefined)
  })
})
