import { describe, it, test } from 'node:test'
import assert from 'node:assert/strict'
import { approvePin, decidePin, parsePinRecord, pendingFindings, pendingPin, stateOf, type PinRecord } from '../../../src/trust/pin-book.ts'

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)
const NOW = new Date('2026-01-02T03:04:05.000Z')

describe('decidePin', () => {
  const pinnedA: PinRecord = { fingerprint: A, pinnedAt: '2026-01-01T00:00:00.000Z' }
  const changedToB: PinRecord = { ...pinnedA, pending: { fingerprint: B, seenAt: NOW.toISOString() } }
  const heldB: PinRecord = { fingerprint: null, pinnedAt: null, pending: { fingerprint: B, seenAt: NOW.toISOString() } }

  const table: Array<[string, PinRecord | undefined, string, boolean, 'pin' | 'hold', string]> = [
    ['first sight of an upstream pins, even under hold', undefined, A, false, 'hold', 'pin'],
    ['a new tool of a known upstream is pinned under newTools: pin', undefined, A, true, 'pin', 'pin'],
    ['a new tool of a known upstream is held under newTools: hold', undefined, A, true, 'hold', 'held'],
    ['the pinned definition is pinned', pinnedA, A, true, 'pin', 'pinned'],
    ['another definition is a change', pinnedA, B, true, 'pin', 'changed'],
    ['the pending definition is still a change', changedToB, B, true, 'pin', 'changed'],
    ['going back to the pinned definition reverts', changedToB, A, true, 'pin', 'reverted'],
    ['an unapproved new tool stays held', heldB, B, true, 'pin', 'held'],
    ['an unapproved new tool that changes again stays held', heldB, A, true, 'pin', 'held']
  ]
  for (const [name, record, fingerprint, known, newTools, expected] of table) {
    it(name, () => { assert.equal(decidePin(record, fingerprint, known, newTools), expected) })
  }

  it('names the state of each record for the CLI', () => {
    assert.equal(stateOf(pinnedA), 'pinned')
    assert.equal(stateOf(changedToB), 'changed')
    assert.equal(stateOf(heldB), 'held')
  })
})

describe('approvePin', () => {
  it('makes the pending fingerprint the pin and drops the pending entry', () => {
    const record: PinRecord = { fingerprint: A, pinnedAt: 'x', pending: pendingPin(B, 'new text', NOW) }
    assert.deepEqual(approvePin(record, NOW), { fingerprint: B, pinnedAt: NOW.toISOString() })
  })

  it('returns undefined when nothing is pending', () => {
    assert.equal(approvePin({ fingerprint: A, pinnedAt: 'x' }, NOW), undefined)
  })
})

describe('pendingPin and parsePinRecord', () => {
  it('keeps only a bounded description of the new definition', () => {
    const pending = pendingPin(B, 'x'.repeat(2000), NOW)
    assert.equal(pending.description?.length, 500)
    assert.equal(pending.seenAt, NOW.toISOString())
    assert.equal(pendingPin(B, undefined, NOW).description, undefined)
  })

  it('accepts stored records and refuses anything else', () => {
    assert.deepEqual(parsePinRecord({ fingerprint: A, pinnedAt: 'x' }), { fingerprint: A, pinnedAt: 'x' })
    assert.deepEqual(parsePinRecord({ fingerprint: null, pinnedAt: null, pending: { fingerprint: B, seenAt: 'y' } }), { fingerprint: null, pinnedAt: null, pending: { fingerprint: B, seenAt: 'y' } })
    assert.equal(parsePinRecord({ fingerprint: 1 }), undefined)
    assert.equal(parsePinRecord({ fingerprint: A, pending: 'no' }), undefined)
    assert.equal(parsePinRecord(null), undefined)
  })
})

test('approving a definition held with scan findings approves those findings for that definition only', () => {
  const now = new Date('2026-11-26T00:00:00Z')
  const findings = [{ rule: 'foreign_host' as const, path: 'description', reason: 'URL to "x.io", not in scanning.allowedHosts' }]
  const held: PinRecord = { fingerprint: null, pinnedAt: null, pending: pendingPin('f1', 'desc', now, findings, 'scan') }
  assert.deepEqual(held.pending?.findings, findings)
  assert.equal(held.pending?.heldBy, 'scan')
  assert.deepEqual(approvePin(held, now), { fingerprint: 'f1', pinnedAt: now.toISOString(), scanApproved: 'f1' })
  // A later change without findings approved by pinning carries no scan approval of an older definition.
  const changed: PinRecord = { fingerprint: 'f1', pinnedAt: now.toISOString(), scanApproved: 'f1', pending: pendingPin('f2', 'd', now) }
  assert.deepEqual(approvePin(changed, now), { fingerprint: 'f2', pinnedAt: now.toISOString() })
  assert.equal(parsePinRecord({ fingerprint: 'f1', pinnedAt: null, scanApproved: 'f1' })?.scanApproved, 'f1')
  assert.deepEqual(pendingFindings({ fingerprint: 'f', seenAt: 'x', findings: [{ rule: 'oversized', path: 'p', reason: 'r' }, { rule: 1 }, null] as never }), [{ rule: 'oversized', path: 'p', reason: 'r' }])
})
