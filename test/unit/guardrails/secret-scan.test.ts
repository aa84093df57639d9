import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createPatternDetector } from '../../../src/guardrails/secret-detector.ts'
import { kindsOf, scanResult, scanValue } from '../../../src/guardrails/secret-scan.ts'
import { deepFreeze, noise, SAMPLES } from '../../helpers/sample-secrets.ts'

const detector = createPatternDetector()

describe('scanning a tool result for secrets', () => {
  it('redacts text items and embedded resource text, and leaves images and links alone', () => {
    const image = { type: 'image', data: noise(4096).toString('base64'), mimeType: 'image/png' }
    const link = { type: 'resource_link', uri: 'file:///tmp/x', name: 'x' }
    const result = deepFreeze({
      content: [
        { type: 'text', text: `key ${SAMPLES.aws_access_key} here` },
        image,
        link,
        { type: 'resource', resource: { uri: 'file:///etc/app.env', mimeType: 'text/plain', text: `TOKEN=${SAMPLES.slack_token}\npassword=hunter2-Xy\n` } },
        { type: 'text', text: 'nothing to see' }
      ],
      _meta: { 'example.com/trace': 'abc' }
    })
    const { value, found } = scanResult(result, detector, true)
    assert.deepEqual(Object.fromEntries(found), { aws_access_key: 1, slack_token: 1, password: 1 })
    assert.deepEqual(value.content, [
      { type: 'text', text: 'key [redacted:aws_access_key] here' },
      image,
      link,
      { type: 'resource', resource: { uri: 'file:///etc/app.env', mimeType: 'text/plain', text: 'TOKEN=[redacted:slack_token]\npassword=[redacted:password]\n' } },
      { type: 'text', text: 'nothing to see' }
    ])
    const content = value.content as unknown[]
    const original = result.content as unknown[]
    assert.equal(content[1], original[1], 'items without secrets are the same objects')
    assert.equal(content[4], original[4])
    assert.equal(value._meta, result._meta)
  })

  it('redacts every string of structuredContent at any depth, keeping strings strings and the rest shared', () => {
    const untouched = { list: [1, 2, 3], note: 'fine' }
    const result = deepFreeze({
      content: [],
      structuredContent: {
        user: { name: 'jane', password: 'hunter2-Xy', tokens: [SAMPLES.github_token, 'plain', { jwt: SAMPLES.jwt }] },
        untouched,
        count: 3,
        flag: true,
        nothing: null
      }
    })
    const { value, found } = scanResult(result, detector, true)
    assert.deepEqual(kindsOf(found), ['github_token', 'jwt', 'password'])
    assert.deepEqual(value.structuredContent, {
      user: { name: 'jane', password: '[redacted:password]', tokens: ['[redacted:github_token]', 'plain', { jwt: '[redacted:jwt]' }] },
      untouched,
      count: 3,
      flag: true,
      nothing: null
    })
    assert.equal((value.structuredContent as Record<string, unknown>).untouched, untouched)
    assert.equal(value.content, result.content)
  })

  it('gives back the very same result when there is no secret, or when only counting', () => {
    const clean = { content: [{ type: 'text', text: 'a UUID 123e4567-e89b-12d3-a456-426614174000' }], structuredContent: { a: { b: ['c'] } } }
    assert.equal(scanResult(clean, detector, true).value, clean)
    const dirty = { content: [{ type: 'text', text: SAMPLES.github_pat }] }
    const counted = scanResult(dirty, detector, false)
    assert.equal(counted.value, dirty)
    assert.deepEqual(Object.fromEntries(counted.found), { github_token: 1 })
  })

  it('walks nesting far deeper than the call stack allows', () => {
    let deep: unknown = { secret: 'Sup3r-secret' }
    for (let i = 0; i < 100_000; i++) deep = i % 2 === 0 ? { a: deep } : [deep]
    const { value, found } = scanValue(deep, detector, true)
    assert.deepEqual(Object.fromEntries(found), { password: 1 })
    let inner: unknown = value
    for (let i = 0; i < 100_000; i++) inner = Array.isArray(inner) ? inner[0] : (inner as { a: unknown }).a
    assert.deepEqual(inner, { secret: '[redacted:password]' })
    assert.notEqual(value, deep)
  })

  it('finds secrets anywhere in call arguments, by value and by field name', () => {
    const args = { query: 'select 1', auth: { apiKey: 'k3y-v4lue-9' }, headers: [`Authorization: Bearer ${SAMPLES.jwt}`] }
    assert.deepEqual(kindsOf(scanValue(args, detector, false).found), ['jwt', 'password'])
    assert.equal(scanValue({ path: '/srv/public/a.txt', n: 3 }, detector, false).found.size, 0)
    assert.equal(scanValue(undefined, detector, false).found.size, 0)
  })
})
