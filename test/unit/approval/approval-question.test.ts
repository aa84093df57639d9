import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_SHOWN_ARGUMENT_CHARS, approvalQuestion, declaresFormElicitation, readDecision } from '../../../src/approval/approval-question.ts'

const SUBJECT = { tool: 'db__drop', upstream: 'db', arguments: { table: 'users' }, sessionChoice: true, protocolVersion: '2025-11-25' }

describe('approval question', () => {
  it('is a form elicitation with one required decision, titled choices as oneOf from 2025-11-25', () => {
    const question = approvalQuestion(SUBJECT)
    assert.equal(question.mode, 'form')
    assert.match(String(question.message), /tool "db__drop" on upstream "db"/)
    assert.match(String(question.message), /"table": "users"/)
    assert.deepEqual(question.requestedSchema, {
      type: 'object',
      properties: {
        decision: {
          type: 'string',
          title: 'Decision',
          oneOf: [{ const: 'approve_once', title: 'Approve once' }, { const: 'approve_session', title: 'Approve for this session' }, { const: 'deny', title: 'Deny' }]
        }
      },
      required: ['decision']
    })
  })

  it('speaks enum and enumNames (and no mode) to a 2025-06-18 client; offers no session choice where there is no session', () => {
    const question = approvalQuestion({ ...SUBJECT, protocolVersion: '2025-06-18', sessionChoice: false })
    assert.equal(question.mode, undefined)
    const decision = (question.requestedSchema as { properties: { decision: Record<string, unknown> } }).properties.decision
    assert.deepEqual(decision, { type: 'string', title: 'Decision', enum: ['approve_once', 'deny'], enumNames: ['Approve once', 'Deny'] })
  })

  it('cuts very long arguments', () => {
    const question = approvalQuestion({ ...SUBJECT, arguments: { text: 'x'.repeat(10_000) } })
    assert.ok(String(question.message).length < MAX_SHOWN_ARGUMENT_CHARS + 500)
    assert.match(String(question.message), /… \(cut\)$/)
  })
})

describe('readDecision', () => {
  it('reads the offered choices', () => {
    assert.equal(readDecision({ action: 'accept', content: { decision: 'approve_once' } }, true), 'once')
    assert.equal(readDecision({ action: 'accept', content: { decision: 'approve_session' } }, true), 'session')
    assert.equal(readDecision({ action: 'accept', content: { decision: 'deny' } }, true), 'deny')
  })

  it('takes anything else as a denial: decline, cancel, a missing or unoffered choice', () => {
    for (const answer of [{ action: 'decline' }, { action: 'cancel' }, { action: 'accept' }, { action: 'accept', content: {} }, { action: 'accept', content: { decision: 'yes' } }]) {
      assert.equal(readDecision(answer, true), 'deny', JSON.stringify(answer))
    }
    assert.equal(readDecision({ action: 'accept', content: { decision: 'approve_session' } }, false), 'deny')
  })
})

describe('declaresFormElicitation', () => {
  it('is true for {} and form, false for none and for URL only', () => {
    assert.equal(declaresFormElicitation({ elicitation: {} }), true)
    assert.equal(declaresFormElicitation({ elicitation: { form: {} } }), true)
    assert.equal(declaresFormElicitation({ elicitation: { form: {}, url: {} } }), true)
    assert.equal(declaresFormElicitation({ elicitation: { url: {} } }), false)
    assert.equal(declaresFormElicitation({}), false)
    assert.equal(declaresFormElicitation({ sampling: {} }), false)
  })
})
