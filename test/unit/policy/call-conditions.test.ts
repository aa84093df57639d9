import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { IncomingToken } from '../../../src/auth/incoming-token.ts'
import type { Principal } from '../../../src/auth/principal.ts'
import type { CatalogEntry } from '../../../src/catalog/catalog.ts'
import { policiesSchema } from '../../../src/config/access-schema.ts'
import { createAccessPolicy } from '../../../src/policy/access-policy.ts'
import type { CallFacts } from '../../../src/policy/call-conditions.ts'
import { callFactsOf } from '../../../src/policy/call-facts.ts'
import type { CallContext } from '../../../src/session/call-context.ts'

const fran: Principal = { id: 'fran', roles: ['finance'], via: 'jwt' }

function policy (rules: unknown[], fallback: 'allow' | 'deny' = 'deny') {
  return createAccessPolicy(policiesSchema.parse({ default: fallback, rules }))
}

function facts (name: string, args: Record<string, unknown>, annotations: Record<string, unknown> = {}): CallFacts {
  return { principal: fran, claims: { department: 'finance' }, tool: { name, upstream: 'files', annotations }, args }
}

describe('decideCall', () => {
  it('takes the first rule whose conditions hold, in order, then the default', () => {
    const p = policy([
      { tools: ['files__read'], when: "args.path.startsWith('/srv/public/')", effect: 'allow' },
      { tools: ['files__pay'], when: 'args.amount <= 1000', effect: 'allow' },
      { tools: ['files__pay'], when: "principal.claims.department == 'finance'", effect: 'ask', approval: { via: 'operator', timeoutMs: 5000 } }
    ])
    assert.equal(p.decidesAtCall, true)
    assert.equal(p.unrestricted, false)
    assert.deepEqual(p.decideCall(facts('files__read', { path: '/srv/public/a' })), { effect: 'allow', ruleIndex: 0 })
    assert.deepEqual(p.decideCall(facts('files__read', { path: '/etc/passwd' })), { effect: 'deny' })
    assert.deepEqual(p.decideCall(facts('files__pay', { amount: 20 })), { effect: 'allow', ruleIndex: 1 })
    assert.deepEqual(p.decideCall(facts('files__pay', { amount: 2000 })), { effect: 'ask', ruleIndex: 2, approval: { via: 'operator', timeoutMs: 5000 } })
    assert.deepEqual(p.decideCall({ ...facts('files__pay', { amount: 2000 }), claims: {} }).effect, 'ask', 'a missing claim fails an ask closed: a human decides')
  })

  it('fails closed when a condition cannot be evaluated: deny and ask match, allow does not', () => {
    const deny = policy([{ tools: ['*'], when: 'args.amount > 100', effect: 'deny' }], 'allow')
    assert.deepEqual(deny.decideCall(facts('t', { amount: 'lots' })).effect, 'deny')
    assert.match(deny.decideCall(facts('t', {})).conditionError ?? '', /field not found: amount/)
    assert.deepEqual(deny.decideCall(facts('t', { amount: 5 })), { effect: 'allow' })
    const ask = policy([{ tools: ['*'], when: 'args.amount > 100', effect: 'ask' }, { tools: ['*'], effect: 'allow' }])
    assert.equal(ask.decideCall(facts('t', {})).effect, 'ask', 'not the broader allow below it')
    const allow = policy([{ tools: ['*'], when: 'args.amount < 100', effect: 'allow' }])
    assert.deepEqual(allow.decideCall(facts('t', {})), { effect: 'deny' })
  })

  it('matches annotations with untrusted defaults: a tool without readOnlyHint counts as writing', () => {
    const p = policy([{ tools: ['*'], annotations: { readOnlyHint: false }, effect: 'deny' }], 'allow')
    assert.equal(p.decideCall(facts('t', {}, {})).effect, 'deny')
    assert.equal(p.decideCall(facts('t', {}, { readOnlyHint: true })).effect, 'allow')
    const both = policy([{ tools: ['*'], annotations: { destructiveHint: true }, when: 'args.force == true', effect: 'deny' }], 'allow')
    assert.equal(both.decideCall(facts('t', { force: true }, { destructiveHint: false })).effect, 'allow', 'both conditions must hold')
    assert.equal(both.decideCall(facts('t', { force: true }, {})).effect, 'deny')
  })

  it('lists show what a call could be allowed: a conditional allow shows the tool, a conditional deny is passed over', () => {
    const p = policy([
      { tools: ['files__rm'], when: 'args.force == true', effect: 'deny' },
      { tools: ['files__read'], when: "args.path.startsWith('/srv/')", effect: 'allow' },
      { tools: ['files__rm'], effect: 'allow' }
    ])
    assert.equal(p.decide(fran, 'tools', 'files__read').allowed, true)
    assert.equal(p.decide(fran, 'tools', 'files__rm').allowed, true)
  })
})

describe('callFactsOf', () => {
  const entry = { exposed: 'files__read', upstream: 'files', definition: { name: 'read', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true } } } as unknown as CatalogEntry
  const ctx = (principal: Principal, token?: IncomingToken): CallContext => ({ principal, token } as unknown as CallContext)

  it('hands a JWT caller\'s verified claims on from its token, and none to an API key caller', () => {
    const token = new IncomingToken('eyJ.secret.sig', { sub: 'fran', department: 'finance' })
    const jwt = callFactsOf(ctx(fran, token), entry, { name: 'files__read', arguments: { path: '/x' } })
    assert.deepEqual(jwt.claims, { sub: 'fran', department: 'finance' })
    assert.deepEqual(jwt.tool, { name: 'files__read', upstream: 'files', annotations: { readOnlyHint: true } })
    assert.deepEqual(jwt.args, { path: '/x' })
    const keyed = callFactsOf(ctx({ id: 'ci', roles: [], via: 'api-key' }, token), entry, { name: 'files__read' })
    assert.deepEqual(keyed.claims, {})
    assert.deepEqual(keyed.args, {})
    assert.equal(JSON.stringify({ token }), '{"token":"[redacted]"}', 'the token carrying claims still never prints')
  })
})
