import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_REASON_CHARS, PendingApprovals, parseOperatorDecision } from '../../../src/approval/pending-approvals.ts'

const REQUEST = { callId: 'call-1', principal: 'alice', tool: 'web__drop', upstream: 'web', arguments: { table: 'users' }, rule: 2 }
const HOUR = 3_600_000

describe('PendingApprovals', () => {
  it('lists a waiting call with when it was asked and until when it waits', () => {
    const pending = new PendingApprovals({ now: () => Date.parse('2026-01-01T00:00:00.000Z') })
    const approval = pending.open(REQUEST, 90_000)
    assert.ok(approval !== undefined)
    approval.cancel()
    const again = pending.open(REQUEST, 90_000)
    assert.ok(again !== undefined)
    assert.deepEqual(pending.list(), [{ id: again.id, ...REQUEST, askedAt: '2026-01-01T00:00:00.000Z', waitsUntil: '2026-01-01T00:01:30.000Z' }])
    again.cancel()
  })

  it('settles with the operator\'s decision and reason, once; the id is then unknown', async () => {
    const pending = new PendingApprovals()
    const approval = pending.open(REQUEST, HOUR)
    assert.ok(approval !== undefined)
    assert.equal(pending.decide(approval.id, { decision: 'deny', reason: 'freeze' }), 'denied')
    assert.deepEqual(await approval.settled, { decision: 'deny', reason: 'freeze' })
    assert.equal(pending.decide(approval.id, { decision: 'approve' }), undefined)
    assert.equal(pending.size, 0)
  })

  it('answers approved for an approval, without a reason field when none was given', async () => {
    const pending = new PendingApprovals()
    const approval = pending.open(REQUEST, HOUR)
    assert.ok(approval !== undefined)
    assert.equal(pending.decide(approval.id, { decision: 'approve' }), 'approved')
    assert.deepEqual(await approval.settled, { decision: 'approve' })
  })

  it('times out by itself and forgets the approval', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] })
    const pending = new PendingApprovals()
    const approval = pending.open(REQUEST, 5000)
    assert.ok(approval !== undefined)
    t.mock.timers.tick(5000)
    assert.deepEqual(await approval.settled, { decision: 'timeout' })
    assert.deepEqual(pending.list(), [])
    assert.equal(pending.decide(approval.id, { decision: 'approve' }), undefined, 'too late')
  })

  it('a cancelled approval settles as cancelled and a decision after it finds nothing', async () => {
    const pending = new PendingApprovals()
    const approval = pending.open(REQUEST, HOUR)
    assert.ok(approval !== undefined)
    approval.cancel()
    assert.deepEqual(await approval.settled, { decision: 'cancelled' })
    assert.equal(pending.decide(approval.id, { decision: 'approve' }), undefined)
  })

  it('refuses one more beyond its bound and takes one again once a place is free', () => {
    const pending = new PendingApprovals({ max: 2 })
    const first = pending.open(REQUEST, HOUR)
    const second = pending.open(REQUEST, HOUR)
    assert.ok(first !== undefined && second !== undefined)
    assert.notEqual(first.id, second.id)
    assert.equal(pending.open(REQUEST, HOUR), undefined)
    first.cancel()
    const third = pending.open(REQUEST, HOUR)
    assert.ok(third !== undefined)
    second.cancel()
    third.cancel()
  })

  it('an unknown id decides nothing', () => {
    assert.equal(new PendingApprovals().decide('nope', { decision: 'approve' }), undefined)
  })
})

describe('parseOperatorDecision', () => {
  it('takes approve or deny with an optional reason', () => {
    assert.deepEqual(parseOperatorDecision({ decision: 'approve' }), { decision: 'approve' })
    assert.deepEqual(parseOperatorDecision({ decision: 'deny', reason: 'no' }), { decision: 'deny', reason: 'no' })
  })

  for (const [body, why] of [
    [undefined, /must be a JSON object/],
    [[], /must be a JSON object/],
    ['approve', /must be a JSON object/],
    [{}, /decision must be "approve" or "deny"/],
    [{ decision: 'APPROVE' }, /decision must be/],
    [{ decision: 'approve', reason: 5 }, /reason must be a string/],
    [{ decision: 'approve', reason: 'x'.repeat(MAX_REASON_CHARS + 1) }, /at most 1000 characters/],
    [{ decision: 'approve', by: 'me' }, /unknown field "by"/]
  ] as const) {
    it(`refuses ${JSON.stringify(body)?.slice(0, 40) ?? 'no body'}`, () => {
      const parsed = parseOperatorDecision(body)
      assert.ok('error' in parsed)
      assert.match(parsed.error, why)
    })
  }
})
