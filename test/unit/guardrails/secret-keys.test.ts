import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { createPatternDetector } from '../../../src/guardrails/secret-detector.ts'
import { kindsOf, scanResult, scanValue } from '../../../src/guardrails/secret-scan.ts'
import { rawAnswer } from '../../../src/protocol/raw-answer.ts'
import { deepFreeze, SAMPLES } from '../../helpers/sample-secrets.ts'

const detector = createPatternDetector()

describe('scanning object keys for secrets', () => {
  it('finds a secret that is an argument\'s key, at the top and nested in objects and arrays', () => {
    assert.deepEqual(kindsOf(scanValue({ [SAMPLES.aws_access_key]: 1 }, detector, false).found), ['aws_access_key'])
    const nested = { query: 'select 1', filters: [{ ok: true }, { by: { [SAMPLES.github_token]: 'x' } }] }
    assert.deepEqual(Object.fromEntries(scanValue(nested, detector, false).found), { github_token: 1 })
    assert.equal(scanValue({ 'an ordinary key': 1, nested: { 'another plain key': [] } }, detector, false).found.size, 0)
  })

  it('renames a structuredContent key holding a secret to [redacted:<kind>], keeping its value, its place and the rest shared', () => {
    const shared = { list: [1, 2] }
    const result = deepFreeze({
      content: [],
      structuredContent: { first: 1, [SAMPLES.github_token]: { scopes: ['repo'] }, shared, last: 'z' }
    })
    const { value, found } = scanResult(result, detector, true)
    assert.deepEqual(Object.fromEntries(found), { github_token: 1 })
    const structured = value.structuredContent as Record<string, unknown>
    assert.deepEqual(Object.keys(structured), ['first', '[redacted:github_token]', 'shared', 'last'])
    assert.deepEqual(structured, { first: 1, '[redacted:github_token]': { scopes: ['repo'] }, shared, last: 'z' })
    assert.equal(structured.shared, shared)
    assert.equal(structured['[redacted:github_token]'], (result.structuredContent as Record<string, unknown>)[SAMPLES.github_token], 'the value is the same object')
    assert.ok(!JSON.stringify(value).includes(SAMPLES.github_token))
  })

  it('renames nested keys, and redacts a secret value under a renamed key and a secret inside a longer key', () => {
    const structured = deepFreeze({
      a: [{ b: { [SAMPLES.slack_token]: { [SAMPLES.aws_access_key]: `jwt ${SAMPLES.jwt}` } } }],
      [`token ${SAMPLES.github_token} (ci)`]: true
    })
    const { value, found } = scanValue(structured, detector, true)
    assert.deepEqual(Object.fromEntries(found), { slack_token: 1, aws_access_key: 1, jwt: 1, github_token: 1 })
    assert.deepEqual(value, {
      a: [{ b: { '[redacted:slack_token]': { '[redacted:aws_access_key]': 'jwt [redacted:jwt]' } } }],
      'token [redacted:github_token] (ci)': true
    })
  })

  it('counts and renames a secret key each time it recurs, as in every row of a table', () => {
    const rows = deepFreeze([{ [SAMPLES.aws_access_key]: 1, n: 'a' }, { [SAMPLES.aws_access_key]: 2, n: 'b' }])
    const { value, found } = scanValue(rows, detector, true)
    assert.deepEqual(Object.fromEntries(found), { aws_access_key: 2 })
    assert.deepEqual(value, [{ '[redacted:aws_access_key]': 1, n: 'a' }, { '[redacted:aws_access_key]': 2, n: 'b' }])
  })

  it('keeps every member when renamed keys collide, with each other or with a key already named so', () => {
    const other = 'ghp' + '_' + 'Z9y8X7w6'.repeat(4) + 'v5U4'
    const { value, found } = scanValue({ [SAMPLES.github_token]: 1, '[redacted:github_token]': 2, [other]: 3, '[redacted:github_token]#2': 4 }, detector, true)
    assert.deepEqual(Object.fromEntries(found), { github_token: 2 })
    assert.deepEqual(Object.entries(value), [
      ['[redacted:github_token]#3', 1],
      ['[redacted:github_token]', 2],
      ['[redacted:github_token]#4', 3],
      ['[redacted:github_token]#2', 4]
    ])
  })

  it('keeps an own __proto__ member a member when its object is copied to rename a sibling', () => {
    const parsed = JSON.parse(`{"__proto__":{"polluted":true},"${SAMPLES.aws_access_key}":1}`) as Record<string, unknown>
    const { value } = scanValue(parsed, detector, true)
    assert.deepEqual(Object.keys(value), ['__proto__', '[redacted:aws_access_key]'])
    assert.equal(Object.getPrototypeOf(value), Object.prototype)
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  it('counts a secret key without copying when only counting', () => {
    const args = { [SAMPLES.aws_access_key]: 1 }
    const { value, found } = scanValue(args, detector, false)
    assert.equal(value, args)
    assert.deepEqual(Object.fromEntries(found), { aws_access_key: 1 })
  })

  it('reads the keys of a result relayed as the bytes it arrived in', () => {
    const json = JSON.stringify({ jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'see structured' }], structuredContent: { tokens: { [SAMPLES.github_token]: 'ci' } } } })
    const answer = rawAnswer(json)
    assert.ok(answer !== undefined, 'the answer is read raw')
    const { value, found } = scanResult(answer.result, detector, true)
    assert.deepEqual(Object.fromEntries(found), { github_token: 1 })
    assert.deepEqual(value.structuredContent, { tokens: { '[redacted:github_token]': 'ci' } })
    assert.ok(!JSON.stringify(value).includes(SAMPLES.github_token))
  })

  it('fuzz: no secret survives redaction as a key or a value, and no member is lost', () => {
    const secrets = [SAMPLES.aws_access_key, SAMPLES.github_token, SAMPLES.github_pat, SAMPLES.slack_token, SAMPLES.jwt]
    const piece = fc.oneof(fc.constantFrom(...secrets), fc.constantFrom('[redacted:github_token]', '[redacted:github_token]#2', '__proto__', 'id'), fc.string({ maxLength: 8 }))
    const text = fc.array(piece, { minLength: 1, maxLength: 3 }).map(parts => parts.join(' '))
    const { tree } = fc.letrec<{ tree: unknown }>(tie => ({
      tree: fc.oneof({ depthSize: 'small', withCrossShrink: true },
        fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null)),
        fc.array(tie('tree'), { maxLength: 4 }),
        fc.dictionary(text, tie('tree'), { maxKeys: 5 }))
    }))
    const members = (v: unknown): number[] => {
      if (v === null || typeof v !== 'object') return []
      const own = Array.isArray(v) ? [] : [Object.keys(v).length]
      return [...own, ...Object.values(v).flatMap(members)]
    }
    fc.assert(fc.property(tree, (original) => {
      // Through JSON, as arguments and results arrive: `__proto__` is an own member then.
      const root = JSON.parse(JSON.stringify(original)) as unknown
      const before = JSON.stringify(root)
      const { value } = scanValue(root, detector, true)
      const after = JSON.stringify(value)
      for (const s of secrets) assert.ok(!after.includes(s), `${s} survived in ${after}`)
      assert.deepEqual(members(value), members(root))
      assert.equal(JSON.stringify(root), before, 'the input is not changed')
    }), { numRuns: 300 })
  })
})
