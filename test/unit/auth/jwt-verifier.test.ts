import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createJwtVerifier, type JwtOutcome } from '../../../src/auth/jwt-verifier.ts'
import { ISSUER, startJwksServer } from '../../helpers/jwks-server.ts'

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url')

function accepted (outcome: JwtOutcome): Extract<JwtOutcome, { ok: true }> {
  assert.ok(outcome.ok, `expected acceptance, got ${JSON.stringify(outcome)}`)
  return outcome
}

/** Asserts the refusal reason and that the description never quotes the token. */
function refused (outcome: JwtOutcome, reason: string, token: string, description?: RegExp): void {
  assert.equal(outcome.ok, false, 'expected a refusal')
  if (outcome.ok) return
  assert.equal(outcome.reason, reason, outcome.description)
  if (description !== undefined) assert.match(outcome.description, description)
  for (const part of token.split('.')) if (part.length > 4) assert.ok(!outcome.description.includes(part), 'description quotes the token')
  assert.ok(!/["\\]/.test(outcome.description), 'description fits a quoted-string without escapes')
}

describe('createJwtVerifier: accepted tokens', () => {
  it('accepts an RS256 token: id from sub, roles from the roles array, expiry in ms', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    const token = await idp.sign({ sub: 'alice', roles: ['reader', 'writer'] })
    const outcome = accepted(await verify(token))
    assert.deepEqual(outcome.principal, { id: 'alice', roles: ['reader', 'writer'], via: 'jwt' })
    assert.ok(outcome.expiresAt !== undefined && Math.abs(outcome.expiresAt - (Date.now() + 300_000)) < 5000)
  })

  it('accepts an ES256 token', async (t) => {
    const idp = await startJwksServer(t)
    const outcome = accepted(await createJwtVerifier(idp.config())(await idp.sign({ sub: 'bob', roles: ['ops'] }, { key: 'ec' })))
    assert.deepEqual(outcome.principal, { id: 'bob', roles: ['ops'], via: 'jwt' })
  })

  it('reads roles from a space-separated string', async (t) => {
    const idp = await startJwksServer(t)
    const outcome = accepted(await createJwtVerifier(idp.config())(await idp.sign({ roles: ' reader  writer ' })))
    assert.deepEqual(outcome.principal.roles, ['reader', 'writer'])
  })

  it('walks into objects at the dots of rolesClaim (realm_access.roles)', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config({ rolesClaim: 'realm_access.roles' }))
    const outcome = accepted(await verify(await idp.sign({ realm_access: { roles: ['admin'] }, roles: ['ignored'] })))
    assert.deepEqual(outcome.principal.roles, ['admin'])
  })

  it('takes a claim whose own name has dots literally (namespaced claims)', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config({ rolesClaim: 'https://gw.example.com/roles' }))
    const outcome = accepted(await verify(await idp.sign({ 'https://gw.example.com/roles': ['tenant-admin'] })))
    assert.deepEqual(outcome.principal.roles, ['tenant-admin'])
  })

  it('gives no roles when the claim is missing or not a list, and drops non-string members', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    assert.deepEqual(accepted(await verify(await idp.sign({}))).principal.roles, [])
    assert.deepEqual(accepted(await verify(await idp.sign({ roles: 42 }))).principal.roles, [])
    assert.deepEqual(accepted(await verify(await idp.sign({ roles: ['a', 1, '', null, 'b'] }))).principal.roles, ['a', 'b'])
  })

  it('takes the id from subjectClaim', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config({ subjectClaim: 'preferred_username' }))
    assert.equal(accepted(await verify(await idp.sign({ preferred_username: 'carol' }))).principal.id, 'carol')
  })

  it('accepts a token expired by less than the clock tolerance', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config({ clockToleranceMs: 60_000 }))
    accepted(await verify(await idp.sign({}, { expiresIn: '-20s' })))
  })

  it('accepts a token without kid while two keys share its alg (key rotation)', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    accepted(await verify(await idp.sign({}, { key: 'rsa-next', kid: null })))
    accepted(await verify(await idp.sign({}, { key: 'rsa', kid: null })))
  })
})

describe('createJwtVerifier: refused tokens', () => {
  it('refuses a token for another audience', async (t) => {
    const idp = await startJwksServer(t)
    const token = await idp.sign({}, { audience: 'https://other.example.com/mcp' })
    refused(await createJwtVerifier(idp.config())(token), 'invalid_token', token, /aud/)
  })

  it('refuses a token from another issuer', async (t) => {
    const idp = await startJwksServer(t)
    const token = await idp.sign({}, { issuer: `${ISSUER}-evil` })
    refused(await createJwtVerifier(idp.config())(token), 'invalid_token', token, /iss/)
  })

  it('refuses a token expired beyond the clock tolerance as expired', async (t) => {
    const idp = await startJwksServer(t)
    const token = await idp.sign({}, { expiresIn: '-2m' })
    refused(await createJwtVerifier(idp.config({ clockToleranceMs: 30_000 }))(token), 'expired', token, /expired/)
  })

  it('refuses a token that is not valid yet (nbf in the future)', async (t) => {
    const idp = await startJwksServer(t)
    const token = await idp.sign({}, { notBefore: '10m', expiresIn: '20m' })
    refused(await createJwtVerifier(idp.config())(token), 'invalid_token', token, /nbf/)
  })

  it('refuses a token without exp and says tokens without expiry are refused', async (t) => {
    const idp = await startJwksServer(t)
    const token = await idp.sign({}, { expiresIn: null })
    refused(await createJwtVerifier(idp.config())(token), 'invalid_token', token, /no expiry \(exp\); tokens without one are refused/)
  })

  it('refuses a token without a subject, or with an empty one', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    for (const sub of [undefined, '']) {
      const token = await idp.sign({ sub })
      refused(await verify(token), 'invalid_token', token, /no subject \(sub\)/)
    }
  })

  it('refuses a token signed by a key the identity provider does not publish', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    const unknownKid = await idp.sign({}, { key: 'foreign' })
    refused(await verify(unknownKid), 'invalid_token', unknownKid, /not signed by a key/)
    const stolenKid = await idp.sign({}, { key: 'foreign', kid: 'rsa-1' })
    refused(await verify(stolenKid), 'invalid_token', stolenKid, /signature/)
  })

  it('refuses alg none and a tampered payload', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    const exp = Math.floor(Date.now() / 1000) + 300
    const claims = { sub: 'admin', iss: ISSUER, aud: idp.config().audience, exp }
    const none = `${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(claims)}.`
    refused(await verify(none), 'invalid_token', none, /algorithm/)
    const [header, , signature] = (await idp.sign({ sub: 'user-1' })).split('.')
    const tampered = `${header}.${b64url(claims)}.${signature}`
    refused(await verify(tampered), 'invalid_token', tampered, /signature/)
  })

  it('refuses an algorithm outside the configured list', async (t) => {
    const idp = await startJwksServer(t)
    const token = await idp.sign({})
    refused(await createJwtVerifier(idp.config({ algorithms: ['ES256'] }))(token), 'invalid_token', token, /algorithm/)
  })

  it('refuses something that is not a JWT', async (t) => {
    const idp = await startJwksServer(t)
    refused(await createJwtVerifier(idp.config())('abc.def.ghi'), 'invalid_token', 'abc.def.ghi', /malformed/)
  })
})

describe('createJwtVerifier: the key source', () => {
  it('fetches the JWKS once and serves later verifications from the cache', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    for (let i = 0; i < 5; i++) accepted(await verify(await idp.sign({}, { key: i % 2 === 0 ? 'rsa' : 'ec' })))
    assert.equal(idp.fetches, 1)
  })

  it('accepts a token signed with a newly published key at once, within the cache window (a key rotation at the identity provider)', async (t) => {
    const idp = await startJwksServer(t)
    idp.publish(['rsa'])
    const verify = createJwtVerifier(idp.config())
    accepted(await verify(await idp.sign({}, { key: 'rsa' })))
    assert.equal(idp.fetches, 1)
    idp.publish(['rsa', 'rsa-next'])
    accepted(await verify(await idp.sign({}, { key: 'rsa-next' })))
    assert.equal(idp.fetches, 2, 'the unknown kid refetched the JWKS once')
    accepted(await verify(await idp.sign({}, { key: 'rsa' })))
    assert.equal(idp.fetches, 2)
  })

  it('refetches the JWKS at most once per cooldown however many unknown kids arrive, at once or one by one', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    accepted(await verify(await idp.sign({}, { key: 'rsa' })))
    const unknown = await Promise.all(Array.from({ length: 40 }, async (_, i) => await idp.sign({}, { key: 'foreign', kid: `unknown-${i}` })))
    const together = await Promise.all(unknown.slice(0, 20).map(verify))
    for (const [i, outcome] of together.entries()) refused(outcome, 'invalid_token', unknown[i] ?? '', /not signed by a key the identity provider publishes/)
    for (const token of unknown.slice(20)) refused(await verify(token), 'invalid_token', token)
    assert.equal(idp.fetches, 2)
    accepted(await verify(await idp.sign({}, { key: 'ec' })))
    assert.equal(idp.fetches, 2)
  })

  it('does not refetch for an unknown kid when the keys were fetched for that very token', async (t) => {
    const idp = await startJwksServer(t)
    const token = await idp.sign({}, { key: 'foreign' })
    refused(await createJwtVerifier(idp.config())(token), 'invalid_token', token)
    assert.equal(idp.fetches, 1)
  })

  for (const mode of ['error', 'garbage', 'hang'] as const) {
    it(`answers unavailable, not invalid, when the JWKS endpoint answers ${mode}`, async (t) => {
      const idp = await startJwksServer(t)
      idp.respondWith(mode)
      const verify = createJwtVerifier(idp.config({ jwksTimeoutMs: 1000 }))
      const token = await idp.sign({})
      const started = Date.now()
      refused(await verify(token), 'unavailable', token, /signing keys could not be fetched/)
      assert.ok(Date.now() - started < 5000, 'bounded by jwksTimeoutMs')
      idp.respondWith('ok')
      accepted(await verify(token))
    })
  }

  it('answers unavailable when nothing listens at the JWKS address', async (t) => {
    const idp = await startJwksServer(t)
    const verify = createJwtVerifier(idp.config())
    const token = await idp.sign({})
    await idp.close()
    refused(await verify(token), 'unavailable', token)
  })
})
