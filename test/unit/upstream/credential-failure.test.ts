import { describe, it, test } from 'node:test'
import assert from 'node:assert/strict'
import { SwitchboardError } from '../../../src/errors.ts'
import { InvalidGrantError } from '../../../src/credentials/oauth/token-requests.ts'
import { CircuitBreaker, breakerVerdict, circuitOpenError, isConnectionOutage } from '../../../src/upstream/circuit-breaker.ts'
import { afterRenewal, isCredentialFailure, isUnauthorized } from '../../../src/upstream/credential-failure.ts'
import { WebSocketUpgradeError } from '../../../src/upstream/websocket-client-transport.ts'

/** What a caller's credential trouble looks like on the way to the upstream. */
const CREDENTIAL_FAILURES: ReadonlyArray<[string, unknown]> = [
  ['a refused token exchange', new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', 'the token exchange refused: invalid_grant (HTTP 400)', { details: { oauthError: 'invalid_grant', status: 400 } })],
  ['a refresh refused with invalid_grant', new InvalidGrantError('the refresh')],
  ['an API-key caller at a token_exchange upstream', new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', 'this request carried none')],
  ['no grant stored (disconnected, revoked, expired)', new SwitchboardError('SB_ERR_UPSTREAM_CONNECT_REQUIRED', undefined, { details: { upstream: 'gh' } })],
  ['HTTP 401 from the upstream', new SwitchboardError('SB_ERR_UPSTREAM_AUTH', 'refused (HTTP 401)', { details: { status: 401 } })],
  ['HTTP 403 from the upstream', new SwitchboardError('SB_ERR_UPSTREAM_AUTH', 'refused (HTTP 403)', { details: { status: 403 } })],
  ['a WebSocket upgrade refused with 401', new WebSocketUpgradeError(401, 'rejected with HTTP 401')],
  ['the token store unreachable', new SwitchboardError('SB_ERR_TOKEN_STORE_UNAVAILABLE')],
  ['no OAuth client at the authorization server', new SwitchboardError('SB_ERR_UPSTREAM_OAUTH_CLIENT', 'register one')]
]

/** The upstream's own failures: what the breaker is for. */
const UPSTREAM_FAILURES: ReadonlyArray<[string, unknown]> = [
  ['a timeout', new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT', 'no answer within 10 ms')],
  ['a refused connect', new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'send failed: connect ECONNREFUSED 127.0.0.1:9')],
  ['not connected', new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE', 'upstream gh is not connected')],
  ['an HTTP 503', new SwitchboardError('SB_ERR_UPSTREAM_HTTP', 'HTTP 503', { details: { status: 503 } })],
  ['a broken stream', new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the upstream ended the response stream without an answer')]
]

describe('isCredentialFailure', () => {
  for (const [what, err] of CREDENTIAL_FAILURES) {
    it(`is true for ${what}, which the breaker counts as neither failure nor success and never as an outage`, () => {
      assert.equal(isCredentialFailure(err), true)
      assert.equal(breakerVerdict(err), 'neutral')
      assert.equal(isConnectionOutage(err), false)
    })
  }

  for (const [what, err] of UPSTREAM_FAILURES) {
    it(`is false for ${what}, the upstream's own failure`, () => {
      assert.equal(isCredentialFailure(err), false)
      assert.equal(breakerVerdict(err), 'failure')
    })
  }

  it('is false for a connect the upstream refused with 502 (the pool counts it as a failed attempt)', () => {
    assert.equal(isCredentialFailure(new WebSocketUpgradeError(502, 'rejected with HTTP 502')), false)
  })

  it('is false for what is neither: a circuit refusal, an HTTP 400, a plain Error, nothing', () => {
    for (const err of [circuitOpenError('gh', { state: 'open', retryAfterMs: 10 }), new SwitchboardError('SB_ERR_UPSTREAM_HTTP', 'HTTP 400', { details: { status: 400 } }), new Error('boom'), undefined, null, 'text']) {
      assert.equal(isCredentialFailure(err), false)
    }
  })

  it('a flood of credential failures never opens the circuit, and the upstream\'s own failures still do', () => {
    const breaker = new CircuitBreaker({ enabled: true, failureThreshold: 3, windowMs: 60_000, cooldownMs: 1_000 })
    for (let i = 0; i < 50; i++) {
      const [, err] = CREDENTIAL_FAILURES[i % CREDENTIAL_FAILURES.length] ?? []
      assert.equal(breaker.admit().allowed, true)
      breaker.record(breakerVerdict(err), false)
      if (!isCredentialFailure(err)) breaker.connectionFailed()
    }
    assert.equal(breaker.state, 'closed')
    assert.equal(breaker.failures, 0)
    for (let i = 0; i < 3; i++) breaker.record(breakerVerdict(UPSTREAM_FAILURES[0]?.[1]), false)
    assert.equal(breaker.state, 'open')
  })
})

test('a 401 is renewed once: isUnauthorized takes a 401, never a 403, and not a 401 that stands after its renewal', () => {
  const status = (s: number): SwitchboardError => new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `refused (HTTP ${s})`, { details: { status: s } })
  assert.equal(isUnauthorized(status(401)), true)
  assert.equal(isUnauthorized(Object.assign(new Error('upgrade refused'), { status: 401 })), true)
  assert.equal(isUnauthorized(status(403)), false)
  const stands = afterRenewal(status(401))
  assert.equal(isUnauthorized(stands), false)
  assert.ok(stands instanceof SwitchboardError && stands.code === 'SB_ERR_UPSTREAM_AUTH' && stands.details.status === 401, 'still the caller\'s 401')
  assert.equal(isCredentialFailure(stands), true)
  const forbidden = status(403)
  assert.equal(afterRenewal(forbidden), forbidden)
})
