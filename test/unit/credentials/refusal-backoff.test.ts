import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { Secret } from '../../../src/auth/secret.ts'
import { SwitchboardError, isSwitchboardError } from '../../../src/errors.ts'
import { RefusalBackoff, isRefusal } from '../../../src/credentials/refusal-backoff.ts'

const REFUSED = new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', 'the token exchange refused: invalid_grant (HTTP 400)', { details: { oauthError: 'invalid_grant', status: 400 } })
const KEY = 'tickets\njwt:carol'

function clock (): { now: () => number, advance: (ms: number) => void } {
  let at = 1_000_000
  return { now: () => at, advance: (ms) => { at += ms } }
}

describe('RefusalBackoff', () => {
  it('after a refusal, the same credential gets the refusal\'s code and how long is left, until retryAfterRefusalMs has passed', () => {
    const time = clock()
    const backoff = new RefusalBackoff({ now: time.now })
    const token = new Secret('subject-token')
    assert.equal(backoff.backingOff(KEY, token), undefined, 'nothing refused yet')
    backoff.refused(KEY, token, REFUSED, 30_000)
    time.advance(2_500)
    const err = backoff.backingOff(KEY, new Secret('subject-token'))
    assert.ok(isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN'))
    assert.equal(err.details.retryAfterMs, 27_500)
    assert.equal(err.details.oauthError, 'invalid_grant')
    assert.match(err.message, /^the token exchange refused: invalid_grant \(HTTP 400\); it is not asked again for this caller for another 28 s \(retryAfterRefusalMs\)/)
    assert.doesNotMatch(err.message, /subject-token/)
    time.advance(27_500)
    assert.equal(backoff.backingOff(KEY, token), undefined, 'over: tried again')
  })

  it('is per key, and a different credential (a fresh token, a new grant) is tried at once', () => {
    const backoff = new RefusalBackoff()
    backoff.refused(KEY, new Secret('old'), REFUSED, 30_000)
    assert.equal(backoff.backingOff('tickets\njwt:dave', new Secret('old')), undefined)
    assert.equal(backoff.backingOff(KEY, new Secret('new')), undefined)
    assert.equal(backoff.backingOff(KEY, new Secret('old')), undefined, 'the new credential replaced the refusal')
  })

  it('is cleared by a success, and not kept at all with retryAfterRefusalMs 0', () => {
    const backoff = new RefusalBackoff()
    const token = new Secret('t')
    backoff.refused(KEY, token, REFUSED, 30_000)
    backoff.clear(KEY)
    assert.equal(backoff.backingOff(KEY, token), undefined)
    backoff.refused(KEY, token, REFUSED, 0)
    assert.equal(backoff.backingOff(KEY, token), undefined)
  })

  it('remembers at most `max` refusals, forgetting the oldest first', () => {
    const backoff = new RefusalBackoff({ max: 3 })
    const token = new Secret('t')
    for (let i = 0; i < 5; i++) backoff.refused(`k${i}`, token, REFUSED, 30_000)
    assert.equal(backoff.backingOff('k0', token), undefined)
    assert.equal(backoff.backingOff('k1', token), undefined)
    for (const key of ['k2', 'k3', 'k4']) assert.ok(backoff.backingOff(key, token) !== undefined, key)
  })
})

describe('isRefusal', () => {
  it('is an answer of the authorization server (an OAuth error or a status), not a failure to reach it', () => {
    assert.equal(isRefusal(REFUSED), true)
    assert.equal(isRefusal(new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', 'refused', { details: { status: 401 } })), true)
    assert.equal(isRefusal(new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', 'the token exchange failed: fetch failed')), false)
    assert.equal(isRefusal(new SwitchboardError('SB_ERR_TOKEN_STORE_UNAVAILABLE')), false)
    assert.equal(isRefusal(new Error('invalid_grant')), false)
  })
})
