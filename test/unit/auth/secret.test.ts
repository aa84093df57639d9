import { test } from 'node:test'
import assert from 'node:assert/strict'
import { format, inspect } from 'node:util'
import { Secret, revealInto, secretsOf } from '../../../src/auth/secret.ts'

const VALUE = 'Bearer sk-live-123456'

test('a Secret prints as [redacted] however it is printed', () => {
  const secret = new Secret(VALUE)
  assert.equal(String(secret), '[redacted]')
  assert.equal(`${secret}`, '[redacted]')
  assert.equal(JSON.stringify({ authorization: secret }), '{"authorization":"[redacted]"}')
  assert.equal(inspect(secret), '[redacted]')
  assert.equal(inspect({ headers: { authorization: secret } }, { depth: 5 }).includes(VALUE), false)
  assert.equal(format('%s %o %j', secret, secret, { secret }).includes(VALUE), false)
})

test('a Secret gives its value only through reveal()', () => {
  assert.equal(new Secret(VALUE).reveal(), VALUE)
})

test('secretsOf wraps each value and revealInto writes them back, over what is there', () => {
  const secrets = secretsOf({ authorization: VALUE, 'x-api-key': 'k' })
  assert.equal(JSON.stringify(secrets).includes(VALUE), false)
  assert.deepEqual(revealInto({ accept: 'a', 'x-api-key': 'old' }, secrets), { accept: 'a', authorization: VALUE, 'x-api-key': 'k' })
})
