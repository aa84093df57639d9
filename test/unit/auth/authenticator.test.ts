import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createAuthenticator, UNAVAILABLE_RETRY_AFTER_S, type AuthOutcome } from '../../../src/auth/authenticator.ts'
import { ANONYMOUS } from '../../../src/auth/principal.ts'
import { authSchema, type AuthConfig } from '../../../src/config/access-schema.ts'
import { startJwksServer, type JwksServer } from '../../helpers/jwks-server.ts'

const KEY = 'sk-test-0123456789abcdefghijklmnop'
const REALM = 'Bearer realm="switchboard"'
const METADATA = 'resource_metadata="https://gw.example.com/.well-known/oauth-protected-resource/mcp"'
const KEYS_ONLY: AuthConfig = authSchema.parse({ apiKeys: [{ id: 'ci-bot', key: KEY, roles: ['ci'] }] })

function withJwt (idp: JwksServer, extra: Record<string, unknown> = {}): AuthConfig {
  const { issuer, audience, jwksUri } = idp.config()
  return authSchema.parse({ jwt: { issuer, audience, jwksUri, jwksTimeoutMs: 2000 }, ...extra })
}

function refusal (outcome: AuthOutcome, status: number, reason: string): Extract<AuthOutcome, { ok: false }> {
  assert.equal(outcome.ok, false, 'expected a refusal')
  if (outcome.ok) throw new Error('unreachable')
  assert.equal(outcome.status, status)
  assert.equal(outcome.reason, reason)
  return outcome
}

describe('createAuthenticator without an auth section', () => {
  it('is disabled and answers ANONYMOUS synchronously for any header', () => {
    const auth = createAuthenticator(undefined)
    assert.equal(auth.enabled, false)
    for (const header of [undefined, '', 'Bearer whatever', 'Basic eDp5', ['a', 'b']]) {
      const outcome = auth.authenticate(header)
      assert.ok(!(outcome instanceof Promise))
      assert.deepEqual(outcome, { ok: true, principal: ANONYMOUS })
    }
  })
})

describe('createAuthenticator with API keys', () => {
  const auth = createAuthenticator(KEYS_ONLY)

  it('accepts the key synchronously as its principal, with the scheme in any case and extra spaces', () => {
    assert.equal(auth.enabled, true)
    for (const header of [`Bearer ${KEY}`, `bearer ${KEY}`, `BEARER ${KEY}`, `Bearer   ${KEY}`]) {
      const outcome = auth.authenticate(header)
      assert.ok(!(outcome instanceof Promise), 'the API-key path is synchronous')
      assert.deepEqual(outcome, { ok: true, principal: { id: 'ci-bot', roles: ['ci'], via: 'api-key' } })
    }
  })

  it('asks for a credential without an error code when the header is missing', () => {
    for (const header of [undefined, '']) {
      const r = refusal(auth.authenticate(header) as AuthOutcome, 401, 'missing')
      assert.deepEqual(r.headers, { 'www-authenticate': REALM })
    }
  })

  it('treats another scheme as no bearer credential (malformed, no error code)', () => {
    for (const header of ['Basic eDp5', 'Bearerx', 'Token abc', `${KEY}`]) {
      const r = refusal(auth.authenticate(header) as AuthOutcome, 401, 'malformed')
      assert.deepEqual(r.headers, { 'www-authenticate': REALM }, header)
    }
  })

  it('refuses a bearer header without exactly one token as invalid_request', () => {
    for (const header of ['Bearer', 'Bearer ', `Bearer ${KEY} ${KEY}`, `Bearer ${KEY}\tx`, [`Bearer ${KEY}`, `Bearer ${KEY}`]]) {
      const r = refusal(auth.authenticate(header) as AuthOutcome, 401, 'malformed')
      assert.deepEqual(r.headers, {
        'www-authenticate': `${REALM}, error="invalid_request", error_description="the Authorization header must carry exactly one bearer token"`
      }, String(header))
    }
  })

  it('refuses an unknown key with invalid_token, and a JWT-shaped token too when no jwt is configured', () => {
    for (const token of ['sk-test-wrong-0123456789abcdefghi', 'aaaa.bbbb.cccc']) {
      const r = refusal(auth.authenticate(`Bearer ${token}`) as AuthOutcome, 401, 'unknown_key')
      assert.deepEqual(r.headers, { 'www-authenticate': `${REALM}, error="invalid_token", error_description="unknown API key"` })
      assert.ok(!r.message.includes(token))
    }
  })
})

describe('createAuthenticator with OAuth (jwt)', () => {
  it('names the metadata URL and the scopes in every challenge', async (t) => {
    const idp = await startJwksServer(t)
    const auth = createAuthenticator(withJwt(idp, { scopes: ['mcp:tools', 'mcp:read'] }))
    const tail = `${METADATA}, scope="mcp:tools mcp:read"`
    assert.deepEqual(refusal(auth.authenticate(undefined) as AuthOutcome, 401, 'missing').headers, { 'www-authenticate': `${REALM}, ${tail}` })
    const expired = refusal(await auth.authenticate(`Bearer ${await idp.sign({}, { expiresIn: '-5m' })}`), 401, 'expired')
    assert.deepEqual(expired.headers, { 'www-authenticate': `${REALM}, error="invalid_token", error_description="the token has expired", ${tail}` })
    assert.equal(expired.message, 'Unauthorized: the token has expired')
  })

  it('leaves scope out when none is configured', async (t) => {
    const idp = await startJwksServer(t)
    const auth = createAuthenticator(withJwt(idp))
    assert.deepEqual(refusal(auth.authenticate(undefined) as AuthOutcome, 401, 'missing').headers, { 'www-authenticate': `${REALM}, ${METADATA}` })
  })

  it('accepts a valid JWT as its subject', async (t) => {
    const idp = await startJwksServer(t)
    const auth = createAuthenticator(withJwt(idp))
    const outcome = await auth.authenticate(`Bearer ${await idp.sign({ sub: 'alice', roles: ['r'], department: 'finance' })}`)
    assert.ok(outcome.ok)
    assert.deepEqual(outcome.principal, { id: 'alice', roles: ['r'], via: 'jwt' })
    assert.equal(outcome.claims?.department, 'finance', 'the verified claims come along for policy conditions')
    assert.ok(!('claims' in outcome.principal), 'claims never enter the principal, which is stored in Redis')
  })

  it('refuses a token that is not JWT-shaped as invalid_token', async (t) => {
    const idp = await startJwksServer(t)
    const r = refusal(await createAuthenticator(withJwt(idp)).authenticate(`Bearer ${KEY}`), 401, 'invalid_token')
    assert.match(r.headers['www-authenticate'] ?? '', /error="invalid_token", error_description="the token is not a JWT"/)
  })

  it('answers 503 with Retry-After and no challenge when the keys cannot be fetched', async (t) => {
    const idp = await startJwksServer(t)
    idp.respondWith('error')
    const r = refusal(await createAuthenticator(withJwt(idp)).authenticate(`Bearer ${await idp.sign({})}`), 503, 'unavailable')
    assert.deepEqual(r.headers, { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) })
  })
})

describe('createAuthenticator with API keys and jwt together', () => {
  it('accepts either credential and tells the failures apart', async (t) => {
    const idp = await startJwksServer(t)
    const auth = createAuthenticator(withJwt(idp, { apiKeys: [{ id: 'ci-bot', key: KEY }] }))
    const key = auth.authenticate(`Bearer ${KEY}`)
    assert.ok(!(key instanceof Promise), 'keys are tried first, synchronously')
    assert.deepEqual(key, { ok: true, principal: { id: 'ci-bot', roles: [], via: 'api-key' } })
    const jwt = await auth.authenticate(`Bearer ${await idp.sign({ sub: 'alice' })}`)
    assert.deepEqual(jwt.ok ? jwt.principal : undefined, { id: 'alice', roles: [], via: 'jwt' })
    const unknown = refusal(auth.authenticate('Bearer sk-test-wrong-0123456789abcdefghi') as AuthOutcome, 401, 'unknown_key')
    assert.equal(unknown.headers['www-authenticate'], `${REALM}, error="invalid_token", error_description="unknown API key", ${METADATA}`)
    refusal(await auth.authenticate(`Bearer ${await idp.sign({}, { audience: 'https://other.example.com' })}`), 401, 'invalid_token')
  })

  it('never puts the presented token in a message or header', async (t) => {
    const idp = await startJwksServer(t)
    const auth = createAuthenticator(withJwt(idp, { apiKeys: [{ id: 'ci-bot', key: KEY }], scopes: ['mcp'] }))
    const tokens = [
      'sk-secret-presented-value-0123456789',
      await idp.sign({}, { expiresIn: '-5m' }),
      await idp.sign({}, { key: 'foreign' }),
      await idp.sign({}, { issuer: 'https://evil.example.com' }),
      await idp.sign({ sub: '' })
    ]
    for (const token of tokens) {
      for (const header of [`Bearer ${token}`, `Bearer ${token} extra`, `Basic ${token}`]) {
        const r = await auth.authenticate(header)
        assert.equal(r.ok, false)
        const shown = JSON.stringify(r)
        for (const part of token.split('.')) assert.ok(!shown.includes(part), `${header} leaked into ${shown}`)
      }
    }
  })
})
