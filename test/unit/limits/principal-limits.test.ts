import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ANONYMOUS } from '../../../src/auth/principal.ts'
import { DEFAULT_LIMITS } from '../../../src/config/limits-schema.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { type LimitName, PrincipalLimits, isLimitRefusal, limitHttpStatus, limitRpcError, principalKey } from '../../../src/limits/principal-limits.ts'
import { rpcError } from '../../../src/protocol/json-rpc.ts'

const ONE = { sessionsPerPrincipal: 1, streamsPerSession: 1, listenStreamsPerPrincipal: 1, inFlightPerPrincipal: 1 }

describe('PrincipalLimits', () => {
  it('refuses past the cap with the limit\'s SB_ERR_LIMIT_* code, counts the refusal, and admits again once a slot is released', () => {
    const refused: LimitName[] = []
    const limits = new PrincipalLimits({ ...ONE, inFlightPerPrincipal: 2 }, (limit) => refused.push(limit))
    const a = limits.acquire('inFlightPerPrincipal', 'api-key:alice')
    const b = limits.acquire('inFlightPerPrincipal', 'api-key:alice')
    const c = limits.acquire('inFlightPerPrincipal', 'api-key:alice')
    assert.ok(!isLimitRefusal(a) && !isLimitRefusal(b))
    assert.ok(isSwitchboardError(c, 'SB_ERR_LIMIT_IN_FLIGHT'))
    assert.deepEqual(c.details, { limit: 'inFlightPerPrincipal', max: 2 })
    assert.deepEqual(refused, ['inFlightPerPrincipal'])
    assert.ok(!isLimitRefusal(limits.acquire('inFlightPerPrincipal', 'api-key:bob')), 'another key has its own count')
    a.release()
    a.release()
    assert.equal(limits.count('inFlightPerPrincipal', 'api-key:alice'), 1, 'a slot is released once, however often release is called')
    assert.ok(!isLimitRefusal(limits.acquire('inFlightPerPrincipal', 'api-key:alice')))
  })

  it('gives each limit its own error code', () => {
    const limits = new PrincipalLimits(ONE)
    const codes = (['sessionsPerPrincipal', 'streamsPerSession', 'listenStreamsPerPrincipal', 'inFlightPerPrincipal'] as const).map((limit) => {
      limits.acquire(limit, 'k')
      const refusal = limits.acquire(limit, 'k')
      return isLimitRefusal(refusal) ? refusal.code : undefined
    })
    assert.deepEqual(codes, ['SB_ERR_LIMIT_SESSIONS', 'SB_ERR_LIMIT_STREAMS', 'SB_ERR_LIMIT_LISTEN_STREAMS', 'SB_ERR_LIMIT_IN_FLIGHT'])
  })

  it('holds an adopted slot whatever the count, and forgets a key once it holds nothing', () => {
    const limits = new PrincipalLimits(ONE)
    const held = [limits.hold('sessionsPerPrincipal', 'k'), limits.hold('sessionsPerPrincipal', 'k')]
    assert.equal(limits.count('sessionsPerPrincipal', 'k'), 2)
    assert.ok(isLimitRefusal(limits.acquire('sessionsPerPrincipal', 'k')))
    for (const slot of held) slot.release()
    assert.equal(limits.holders('sessionsPerPrincipal'), 0)
  })

  it('applies new caps to the next admission after a reload', () => {
    const limits = new PrincipalLimits(ONE)
    limits.acquire('streamsPerSession', 's')
    assert.ok(isLimitRefusal(limits.acquire('streamsPerSession', 's')))
    limits.reconfigure({ ...ONE, streamsPerSession: 2 })
    assert.ok(!isLimitRefusal(limits.acquire('streamsPerSession', 's')))
  })

  it('counts every client of a gateway without auth as the one anonymous principal, under defaults a single user stays far below', () => {
    assert.equal(principalKey(ANONYMOUS), 'none:anonymous')
    assert.deepEqual({ ...DEFAULT_LIMITS }, { sessionsPerPrincipal: 100, streamsPerSession: 8, listenStreamsPerPrincipal: 16, inFlightPerPrincipal: 64, sessionConnectionsPerPrincipal: 4 })
  })
})

describe('the wire shape of a refusal', () => {
  it('is JSON-RPC -32000 with the code, limit and max, and HTTP 429 with Retry-After only where waiting helps', () => {
    const limits = new PrincipalLimits(ONE)
    limits.acquire('inFlightPerPrincipal', 'k')
    limits.acquire('sessionsPerPrincipal', 'k')
    const inFlight = limits.acquire('inFlightPerPrincipal', 'k')
    const sessions = limits.acquire('sessionsPerPrincipal', 'k')
    assert.ok(isLimitRefusal(inFlight) && isLimitRefusal(sessions))
    const busy = limitRpcError(4, inFlight)
    assert.deepEqual({ ...busy, error: { ...busy.error, message: '' } }, { jsonrpc: '2.0', id: 4, error: { code: -32000, message: '', data: { 'switchboard/error': { code: 'SB_ERR_LIMIT_IN_FLIGHT', limit: 'inFlightPerPrincipal', max: 1 }, 'switchboard/retryAfterMs': 1000 } } })
    assert.deepEqual(limitHttpStatus({ ...busy, id: 5 }), { status: 429, retryAfterS: 1 }, 'a copy of the answer with its error object is still the refusal')
    assert.deepEqual(limitHttpStatus(limitRpcError(null, sessions)), { status: 429, retryAfterS: undefined })
  })

  it('is not mistaken for an upstream error that merely looks like one', () => {
    const lookalike = rpcError(1, -32000, 'busy', { 'switchboard/error': { code: 'SB_ERR_LIMIT_IN_FLIGHT', limit: 'inFlightPerPrincipal', max: 1 } })
    assert.equal(limitHttpStatus(lookalike), undefined)
    assert.equal(limitHttpStatus(undefined), undefined)
  })
})
