import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { CallFacts } from '../../../src/policy/call-conditions.ts'
import { compileCel, MAX_CONDITION_DEPTH, MAX_CONDITION_VALUES, type CelCondition } from '../../../src/policy/cel-expression.ts'

function facts (args: Record<string, unknown>, over: Partial<CallFacts> = {}): CallFacts {
  return {
    principal: { id: 'fran', roles: ['admin', 'dev'], via: 'jwt' },
    claims: { department: 'finance', level: 3 },
    tool: { name: 'files__read', upstream: 'files', annotations: { readOnlyHint: true } },
    args,
    ...over
  }
}

function compiled (source: string): CelCondition {
  const c = compileCel(source)
  if ('error' in c) assert.fail(`${source}: ${c.error}`)
  return c
}

function compileError (source: string): string {
  const c = compileCel(source)
  assert.ok('error' in c, `${source} compiled`)
  return c.error
}

describe('compileCel', () => {
  it('evaluates the documented examples over principal, tool and args', () => {
    const f = facts({ path: '/srv/public/a.txt', amount: 1000 })
    for (const source of [
      "args.path.startsWith('/srv/public/')",
      'args.amount <= 1000',
      "'admin' in principal.roles",
      "principal.claims.department == 'finance'",
      'tool.annotations.readOnlyHint == true',
      "tool.name == 'files__read' && tool.upstream == 'files' && principal.id == 'fran'"
    ]) assert.deepEqual(compiled(source).evaluate(f), { value: true }, source)
    assert.deepEqual(compiled('args.amount <= 1000').evaluate(facts({ amount: 1000.5 })), { value: false })
    assert.deepEqual(compiled("args.path.startsWith('/srv/public/')").evaluate(facts({ path: '/srv/public/../../etc/passwd' })), { value: true }, 'CEL compares strings; paths are the operator\'s to normalise')
  })

  it('treats whole JSON numbers as int, so arithmetic and list indexes work, and compares them with doubles', () => {
    assert.deepEqual(compiled('args.n % 2 == 0 && args.list[args.i] == "b" && args.n == 4.0').evaluate(facts({ n: 4, i: 1, list: ['a', 'b'] })), { value: true })
    assert.deepEqual(compiled('args.items.all(x, x.qty < 10)').evaluate(facts({ items: [{ qty: 1 }, { qty: 9 }] })), { value: true })
    assert.deepEqual(compiled('args.items.exists(x, x.qty >= 10)').evaluate(facts({ items: [{ qty: 1 }] })), { value: false })
    assert.deepEqual(compiled("has(args.path) && args.path.lowerAscii().contains('secret')").evaluate(facts({ path: '/A/SECRET' })), { value: true }, 'the strings extension is there')
  })

  it('refuses, with the reason, what no call could make sense of', () => {
    assert.match(compileError("args.path.startsWith('/srv'"), /^syntax error at 1:\d+: /)
    assert.equal(compileError('user.id == "x"'), 'unknown variable user (known: principal, tool, args)')
    assert.equal(compileError('principal.name == "x"'), 'principal has no field name (it has id, roles, claims)')
    assert.equal(compileError('tool.args.x == 1'), 'tool has no field args (it has name, upstream, annotations)')
    assert.equal(compileError('launch(args)'), 'unknown function launch')
    assert.equal(compileError('args.path.shout()'), 'unknown function shout')
    assert.equal(compileError('google.protobuf.Value{}'), 'message types are not available (google.protobuf.Value)')
    assert.equal(compileError('('.repeat(5000) + '1' + ')'.repeat(5000)), 'the expression nests too deeply')
    compiled("args.all(k, k != 'x') && [1, 2].map(n, n * 2).size() == 2 && type(args) == map")
  })

  it('answers an error, not a value, when the arguments do not fit the expression', () => {
    assert.deepEqual(compiled('args.path.startsWith("/")').evaluate(facts({})), { error: 'field not found: path' })
    assert.match((compiled('args.amount <= 1000').evaluate(facts({ amount: 'lots' })) as { error: string }).error, /no matching overload/)
    assert.deepEqual(compiled('args.path').evaluate(facts({ path: '/x' })), { error: 'the expression did not give true or false' })
  })

  it('does not evaluate facts deeper or larger than its bounds', () => {
    let deep: Record<string, unknown> = {}
    const root = deep
    for (let i = 0; i < MAX_CONDITION_DEPTH + 5; i++) {
      const next = {}
      deep.a = next
      deep = next
    }
    assert.match((compiled('has(args.a)').evaluate(facts(root)) as { error: string }).error, /nest deeper than/)
    // Far deeper than any stack: the bound stops the walk long before.
    let chain: unknown = 1
    for (let i = 0; i < 100_000; i++) chain = [chain]
    assert.match((compiled('true').evaluate(facts({ chain })) as { error: string }).error, /nest deeper than/)
    assert.match((compiled('true').evaluate(facts({ many: Array(MAX_CONDITION_VALUES).fill(0) })) as { error: string }).error, /more than 10000 values/)
    assert.deepEqual(compiled('args.many.size() == 100').evaluate(facts({ many: Array(100).fill(0) })), { value: true })
  })
})
