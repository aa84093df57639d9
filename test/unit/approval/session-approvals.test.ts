import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SessionApprovals } from '../../../src/approval/session-approvals.ts'

describe('SessionApprovals', () => {
  it('remembers a tool for its session only', () => {
    const approvals = new SessionApprovals()
    approvals.remember('s1', 'web__drop')
    assert.equal(approvals.has('s1', 'web__drop'), true)
    assert.equal(approvals.has('s1', 'web__other'), false)
    assert.equal(approvals.has('s2', 'web__drop'), false)
  })

  it('forgets a session that ended, and everything when the policies change', () => {
    const approvals = new SessionApprovals()
    approvals.remember('s1', 'a')
    approvals.remember('s2', 'a')
    approvals.forgetSession('s1')
    assert.deepEqual([approvals.has('s1', 'a'), approvals.has('s2', 'a')], [false, true])
    approvals.clear()
    assert.equal(approvals.has('s2', 'a'), false)
    assert.equal(approvals.size, 0)
  })

  it('past its bound forgets the session used least recently', () => {
    const approvals = new SessionApprovals(2, 10)
    approvals.remember('s1', 'a')
    approvals.remember('s2', 'a')
    assert.equal(approvals.has('s1', 'a'), true, 'used: s2 is now the oldest')
    approvals.remember('s3', 'a')
    assert.deepEqual([approvals.has('s1', 'a'), approvals.has('s2', 'a'), approvals.has('s3', 'a')], [true, false, true])
    assert.equal(approvals.size, 2)
  })

  it('past its bound per session forgets the tool approved first', () => {
    const approvals = new SessionApprovals(10, 2)
    approvals.remember('s1', 'a')
    approvals.remember('s1', 'b')
    approvals.remember('s1', 'c')
    assert.deepEqual(['a', 'b', 'c'].map(tool => approvals.has('s1', tool)), [false, true, true])
  })
})
