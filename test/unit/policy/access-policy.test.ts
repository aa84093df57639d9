import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { Principal } from '../../../src/auth/principal.ts'
import { policiesSchema } from '../../../src/config/access-schema.ts'
import { createAccessPolicy } from '../../../src/policy/access-policy.ts'

const alice: Principal = { id: 'alice', roles: ['dev'], via: 'api-key' }
const bob: Principal = { id: 'bob', roles: ['ops', 'oncall'], via: 'jwt' }
const carol: Principal = { id: 'carol', roles: [], via: 'api-key' }

function policy (doc: unknown) {
  return createAccessPolicy(policiesSchema.parse(doc))
}

describe('access policy', () => {
  it('allows everything with no rules and default allow, and says so (no filtering needed)', () => {
    const p = policy({})
    assert.equal(p.unrestricted, true)
    assert.equal(p.decide(carol, 'tools', 'files__delete').allowed, true)
    assert.equal(p.viewFor(carol).unrestricted, true)
  })

  it('lets the first matching rule win, in config order', () => {
    const p = policy({
      default: 'deny',
      rules: [
        { principals: ['*'], tools: ['*__delete_*'], effect: 'deny' },
        { principals: ['role:dev'], tools: ['files__*'], effect: 'allow' }
      ]
    })
    assert.deepEqual(p.decide(alice, 'tools', 'files__read'), { allowed: true, ruleIndex: 1 })
    assert.deepEqual(p.decide(alice, 'tools', 'files__delete_all'), { allowed: false, ruleIndex: 0 })
    assert.deepEqual(p.decide(bob, 'tools', 'files__read'), { allowed: false })
    assert.equal(p.unrestricted, false)
  })

  it('matches principals by id glob, by role:<name> and by role glob', () => {
    const p = policy({
      default: 'deny',
      rules: [
        { principals: ['car*'], tools: ['a'], effect: 'allow' },
        { principals: ['role:on*'], tools: ['b'], effect: 'allow' },
        { principals: ['role:dev'], tools: ['c'], effect: 'allow' }
      ]
    })
    assert.equal(p.decide(carol, 'tools', 'a').allowed, true)
    assert.equal(p.decide(alice, 'tools', 'a').allowed, false)
    assert.equal(p.decide(bob, 'tools', 'b').allowed, true)
    assert.equal(p.decide(alice, 'tools', 'c').allowed, true)
    assert.equal(p.decide(bob, 'tools', 'c').allowed, false)
  })

  it('applies a rule only to the kinds it names: tools, prompts, resources', () => {
    const p = policy({
      default: 'allow',
      rules: [
        { principals: ['*'], prompts: ['secret__*'], effect: 'deny' },
        { principals: ['*'], resources: ['file:///etc/*'], effect: 'deny' }
      ]
    })
    assert.equal(p.decide(alice, 'tools', 'secret__x').allowed, true)
    assert.equal(p.decide(alice, 'prompts', 'secret__x').allowed, false)
    assert.equal(p.decide(alice, 'resources', 'file:///etc/passwd').allowed, false)
    assert.equal(p.decide(alice, 'resources', 'file:///home/a').allowed, true)
  })

  it('gives the same answer through a principal\'s view, remembered per principal', () => {
    const p = policy({ default: 'deny', rules: [{ principals: ['role:dev'], tools: ['x*'], effect: 'allow' }] })
    const view = p.viewFor(alice)
    assert.equal(p.viewFor({ ...alice }), view, 'one view per principal identity and roles')
    assert.notEqual(p.viewFor({ ...alice, roles: [] }), view)
    for (let i = 0; i < 3; i++) {
      assert.equal(view.allows('tools', 'xa'), true)
      assert.equal(view.allows('tools', 'ya'), false)
    }
    assert.equal(p.viewFor(bob).allows('tools', 'xa'), false)
  })

  it('never treats Object.prototype names as rules or principals', () => {
    const p = policy({ default: 'deny', rules: [{ principals: ['alice'], tools: ['toString'], effect: 'allow' }] })
    assert.equal(p.decide({ id: 'constructor', roles: ['__proto__'], via: 'jwt' }, 'tools', 'toString').allowed, false)
    assert.equal(p.decide(alice, 'tools', 'constructor').allowed, false)
  })

  it('explains which rule decided and why the earlier ones did not', () => {
    const p = policy({
      default: 'deny',
      rules: [
        { principals: ['bob'], tools: ['*'], effect: 'allow' },
        { principals: ['*'], prompts: ['*'], effect: 'allow' },
        { principals: ['role:dev'], tools: ['other__*'], effect: 'allow' },
        { principals: ['role:dev'], tools: ['files__*'], effect: 'allow', description: 'devs read files' }
      ]
    })
    const { lines } = p.explain(alice, 'tools', 'files__read')
    assert.match(lines[0] ?? '', /^rule 0: skipped, principals \[bob\] do not match alice \(roles dev\)/)
    assert.match(lines[1] ?? '', /^rule 1: skipped, it names no tools/)
    assert.match(lines[2] ?? '', /^rule 2: skipped, tools \[other__\*\] do not match files__read/)
    assert.match(lines[3] ?? '', /^rule 3 \(devs read files\): ALLOW — role:dev matches role dev; files__\* matches tool files__read/)
    assert.equal(lines[4], 'decision: allow (first matching rule wins)')
    assert.deepEqual(p.explain(carol, 'tools', 'files__read').lines.slice(-2), ['no rule matched: default deny', 'decision: deny'])
  })
})
