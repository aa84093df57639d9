import { describe, it, test } from 'node:test'
import assert from 'node:assert/strict'
import { approvePin, copyPins, decidePin, parsePinRecord, pinsSummary, pendingFindings, pendingPin, stateOf, type PinRecord } from '../../../src/trust/pin-book.ts'
import { isTruncatedDefinition, MAX_DEFINITION_BYTES, parseDefinition, recordedDefinition } from '../../../src/trust/tool-definition.ts'

const A = 'a'.repeat(64)
const B = 'b'.repeat(64)
const NOW = new Date('2026-01-02T03:04:05.000Z')
const SCHEMA = { type: 'object', properties: { text: { type: 'string' } } }
/** A listed tool with this description. */
function tool (description?: string): Record<string, unknown> {
  return { name: 'echo', description, inputSchema: SCHEMA }
}

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
  it('makes the pending fingerprint and definition the pin and drops the pending entry', () => {
    const record: PinRecord = { fingerprint: A, pinnedAt: 'x', definition: recordedDefinition(tool('old text')), pending: pendingPin(B, tool('new text'), NOW) }
    assert.deepEqual(approvePin(record, NOW), { fingerprint: B, pinnedAt: NOW.toISOString(), definition: { name: 'echo', description: 'new text', inputSchema: SCHEMA } })
  })

  it('approves a pending entry recorded before definitions were kept as a pin without a definition', () => {
    const record: PinRecord = { fingerprint: A, pinnedAt: 'x', definition: recordedDefinition(tool('old')), pending: { fingerprint: B, seenAt: 'y' } }
    assert.deepEqual(approvePin(record, NOW), { fingerprint: B, pinnedAt: NOW.toISOString() })
  })

  it('returns undefined when nothing is pending', () => {
    assert.equal(approvePin({ fingerprint: A, pinnedAt: 'x' }, NOW), undefined)
  })
})

describe('pendingPin and parsePinRecord', () => {
  it('keeps only a bounded description of the new definition', () => {
    const pending = pendingPin(B, tool('x'.repeat(2000)), NOW)
    assert.equal(pending.description?.length, 500)
    assert.equal(pending.seenAt, NOW.toISOString())
    assert.equal(pendingPin(B, tool(), NOW).description, undefined)
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
  const held: PinRecord = { fingerprint: null, pinnedAt: null, pending: pendingPin('f1', tool('desc'), now, findings, 'scan') }
  assert.deepEqual(held.pending?.findings, findings)
  assert.equal(held.pending?.heldBy, 'scan')
  assert.deepEqual(approvePin(held, now), { fingerprint: 'f1', pinnedAt: now.toISOString(), definition: recordedDefinition(tool('desc')), scanApproved: 'f1' })
  // A later change without findings approved by pinning carries no scan approval of an older definition.
  const changed: PinRecord = { fingerprint: 'f1', pinnedAt: now.toISOString(), scanApproved: 'f1', pending: pendingPin('f2', tool('d'), now) }
  assert.deepEqual(approvePin(changed, now), { fingerprint: 'f2', pinnedAt: now.toISOString(), definition: recordedDefinition(tool('d')) })
  assert.equal(parsePinRecord({ fingerprint: 'f1', pinnedAt: null, scanApproved: 'f1' })?.scanApproved, 'f1')
  assert.deepEqual(pendingFindings({ fingerprint: 'f', seenAt: 'x', findings: [{ rule: 'oversized', path: 'p', reason: 'r' }, { rule: 1 }, null] as never }), [{ rule: 'oversized', path: 'p', reason: 'r' }])
})

describe('recorded definitions', () => {
  it('records the name and exactly the fingerprinted fields, keys sorted, nothing else', () => {
    const listed = { name: 'echo', description: 'd', icons: [{ src: 'x' }], _meta: { v: 1 }, inputSchema: { type: 'object', required: ['b'], properties: { b: {}, a: {} } }, annotations: { readOnlyHint: true } }
    const recorded = recordedDefinition(listed)
    assert.deepEqual(recorded, { name: 'echo', description: 'd', inputSchema: { properties: { a: {}, b: {} }, required: ['b'], type: 'object' }, annotations: { readOnlyHint: true } })
    assert.deepEqual(Object.keys(recorded), ['name', 'description', 'inputSchema', 'annotations'])
    assert.deepEqual(Object.keys((recorded as { inputSchema: object }).inputSchema), ['properties', 'required', 'type'])
  })

  it('records a definition over 64 KB of JSON as { truncated, bytes } only', () => {
    const big = tool('y'.repeat(MAX_DEFINITION_BYTES))
    const recorded = recordedDefinition(big)
    assert.deepEqual(recorded, { truncated: true, bytes: Buffer.byteLength(JSON.stringify({ name: 'echo', description: big.description, inputSchema: { properties: { text: { type: 'string' } }, type: 'object' } })) })
    assert.deepEqual(pendingPin(B, big, NOW).definition, recorded)
    assert.ok(JSON.stringify(pendingPin(B, big, NOW)).length < 1000, 'the pending record stays small')
    // A stored definition over the cap (a hand-edited file) is capped as it is read.
    const reread = parseDefinition({ name: 'echo', description: 'z'.repeat(MAX_DEFINITION_BYTES + 1) })
    assert.ok(reread !== undefined && isTruncatedDefinition(reread) && reread.bytes > MAX_DEFINITION_BYTES)
  })

  it('parses records with definitions, records without them (older versions), and drops malformed definitions only', () => {
    const definition = recordedDefinition(tool('a'))
    const next = recordedDefinition(tool('b'))
    assert.deepEqual(parsePinRecord({ fingerprint: A, pinnedAt: 'x', definition, pending: { fingerprint: B, seenAt: 'y', definition: next } }), { fingerprint: A, pinnedAt: 'x', definition, pending: { fingerprint: B, seenAt: 'y', definition: next } })
    assert.deepEqual(parsePinRecord({ fingerprint: A, pinnedAt: 'x', definition: 'nope', pending: { fingerprint: B, seenAt: 'y', definition: [1] } }), { fingerprint: A, pinnedAt: 'x', pending: { fingerprint: B, seenAt: 'y' } })
    assert.deepEqual(parsePinRecord({ fingerprint: A, pinnedAt: 'x', definition: { truncated: true, bytes: 70000 } })?.definition, { truncated: true, bytes: 70000 })
    assert.deepEqual(parsePinRecord({ fingerprint: A, pinnedAt: 'x', definition: { name: 'echo', description: 'd', secretField: 'dropped' } })?.definition, { name: 'echo', description: 'd' })
  })
})

test('pinsSummary tells a re-read that changed pins or filled in a definition from one that changed nothing', () => {
  const pinned: PinRecord = { fingerprint: A, pinnedAt: 'x', definition: recordedDefinition(tool('a')) }
  const same = pinsSummary({ web: { echo: pinned } })
  assert.equal(pinsSummary({ web: { echo: { ...pinned, definition: recordedDefinition(tool('a')) } } }), same)
  assert.notEqual(pinsSummary({ web: { echo: { fingerprint: A, pinnedAt: 'x' } } }), same, 'a definition filled in is a change')
  assert.notEqual(pinsSummary({ web: { echo: { ...pinned, pending: pendingPin(B, tool('b'), NOW) } } }), same)
  const copy = copyPins({ web: { echo: pinned } })
  assert.equal(copy.web?.echo, pinned, 'records are shared')
  copy.web = {}
  assert.equal(pinsSummary({ web: { echo: pinned } }), same)
})
