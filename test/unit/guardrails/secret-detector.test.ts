/* eslint-disable no-template-curly-in-string -- ${VAR} placeholders are what these tests feed the detector */
import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createHash, randomUUID } from 'node:crypto'
import { createPatternDetector, redactMatches } from '../../../src/guardrails/secret-detector.ts'
import { noise, SAMPLES } from '../../helpers/sample-secrets.ts'

const detector = createPatternDetector()
const kinds = (text: string): string[] => detector.find(text).map(m => m.kind)
const found = (text: string): string[] => detector.find(text).map(m => text.slice(m.start, m.end))

describe('the pattern secret detector', () => {
  it('finds each kind inside surrounding text, at its exact place', () => {
    const cases: Array<[string, string]> = [
      ['aws_access_key', SAMPLES.aws_access_key],
      ['github_token', SAMPLES.github_token],
      ['github_token', SAMPLES.github_pat],
      ['github_token', 'gho_' + 'Q'.repeat(36)],
      ['github_token', 'ghs_' + 'aZ09'.repeat(9)],
      ['slack_token', SAMPLES.slack_token],
      ['slack_token', 'xoxp-' + '1111111111-2222222222-3333333333-' + 'f'.repeat(32)],
      ['jwt', SAMPLES.jwt],
      ['private_key', SAMPLES.private_key.trim()]
    ]
    for (const [kind, secret] of cases) {
      const text = `before ${secret} after`
      assert.deepEqual(kinds(text), [kind], `${kind}: ${secret.slice(0, 12)}…`)
      assert.deepEqual(found(text), [secret])
    }
  })

  it('finds password-style assignments in many spellings and takes only the value', () => {
    const cases: Array<[string, string]> = [
      ['password=hunter2-Xy', 'hunter2-Xy'],
      ['DB_PASSWORD: S3cr3tValue', 'S3cr3tValue'],
      ['passwd = "correct horse"x', ''],
      ['pwd=Tr0ub4dor&3', 'Tr0ub4dor'],
      ['client_secret: \'abcdefgh\'', 'abcdefgh'],
      ['{"api_key": "k3y-v4lue-1"}', 'k3y-v4lue-1'],
      ['{\\"apiKey\\": \\"k3y-v4lue-2\\"}', 'k3y-v4lue-2'],
      ['X-Api-Key: 0123abcdEF', '0123abcdEF'],
      ['aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
      ['https://api.example.com/v1?api_key=abc123def456&page=2', 'abc123def456'],
      ['PASSWORD := "s3cret!!"', 's3cret!!'],
      [':password => "rubyHash1"', 'rubyHash1'],
      ['The password: Blue42-sky.', 'Blue42-sky']
    ]
    for (const [text, value] of cases) {
      assert.deepEqual(found(text), value === '' ? [] : [value], text)
      if (value !== '') assert.deepEqual(kinds(text), ['password'])
    }
  })

  it('does not take placeholders, code, prose or paths for passwords', () => {
    for (const text of [
      'password: string',
      'interface User { password: string; secret?: boolean }',
      'password = ${DB_PASSWORD}',
      'password=$DB_PASSWORD',
      'api_key=<your key here>',
      'password: "********"',
      'password: ""',
      'secret: true',
      'passwordless=true',
      'Forgot your password? Reset it here.',
      'password: incorrect',
      'Password: required',
      'Your password: required. Your secret: optional!',
      'password = getPassword()',
      'password: req.body.password',
      'pwd: /srv/app/data',
      'password=[redacted:password] and api_key=[redacted]',
      '{"type":"object","properties":{"password":{"type":"string","minLength":8}}}',
      '{"password": "your_password_here"}',
      'password: null'
    ]) assert.deepEqual(found(text), [], text)
  })

  it('leaves UUIDs, git SHAs, hashes and base64 images alone', () => {
    const png = 'data:image/png;base64,' + noise(64 * 1024).toString('base64')
    const texts = [
      randomUUID(),
      `commit ${createHash('sha1').update('x').digest('hex')} by someone`,
      `sha256:${createHash('sha256').update('x').digest('hex')}`,
      createHash('sha512').update('x').digest('base64'),
      png,
      noise(8192, 'other').toString('base64url'),
      `![chart](${png})`,
      // A base64 JSON blob that starts like a JWT but whose header names no algorithm.
      [Buffer.from('{"kind":"cursor"}').toString('base64url'), Buffer.from('{"page":2,"size":50}').toString('base64url'), 'c2lnbmF0dXJlLWlzLWhlcmU'].join('.'),
      'AKIA-not-a-key and ghp_short and xoxb-nope',
      '-----BEGIN PRIVATE KEY----- is how a PKCS#8 key file starts'
    ]
    for (const text of texts) assert.deepEqual(kinds(text), [], text.slice(0, 60))
  })

  it('takes a cut private key block to the end of the text', () => {
    const cut = SAMPLES.private_key.slice(0, 100)
    assert.deepEqual(found(`key: ${cut}`), [cut])
  })

  it('judges a field by its name in structured data', () => {
    assert.deepEqual(detector.findInField('password', 'hunter2'), [{ kind: 'password', start: 0, end: 7 }])
    assert.deepEqual(detector.findInField('clientSecret', 'abcdefgh').map(m => m.kind), ['password'])
    assert.deepEqual(detector.findInField('password', 'string'), [])
    assert.deepEqual(detector.findInField('password', 'two words'), [])
    assert.deepEqual(detector.findInField('secret_name', 'prod/db-password'), [])
    assert.deepEqual(detector.findInField('description', 'hunter2x'), [])
    // A token under any name is that token.
    assert.deepEqual(detector.findInField('apiKey', SAMPLES.github_token).map(m => m.kind), ['github_token'])
  })

  it('redacts each secret as [redacted:<kind>], and finds nothing in what it wrote', () => {
    const text = `aws ${SAMPLES.aws_access_key}, token=${SAMPLES.github_token}; password=hunter2-Xy\n${SAMPLES.private_key}done`
    const matches = detector.find(text)
    assert.deepEqual(matches.map(m => m.kind), ['aws_access_key', 'github_token', 'password', 'private_key'])
    const redacted = redactMatches(text, matches)
    assert.equal(redacted, 'aws [redacted:aws_access_key], token=[redacted:github_token]; password=[redacted:password]\n[redacted:private_key]\ndone')
    assert.deepEqual(detector.find(redacted), [])
  })
})
