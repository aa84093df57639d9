import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SwitchboardError } from '../../../src/errors.ts'
import { CircuitBreaker, breakerVerdict, isAuthFailure, isConnectionOutage } from '../../../src/upstream/circuit-breaker.ts'
import { classifySendFailure } from '../../../src/upstream/send-failure.ts'
import { WebSocketUpgradeError } from '../../../src/upstream/websocket-client-transport.ts'

const refused = (status: number): SwitchboardError => new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `the upstream refused the credential (HTTP ${status})`, { details: { status } })

describe('an upstream refusing the credential', () => {
  it('is neither a failure nor a success for the breaker, and no connection outage', () => {
    for (const status of [401, 403]) {
      assert.equal(breakerVerdict(refused(status)), 'neutral')
      assert.equal(isConnectionOutage(refused(status)), false)
    }
  })

  it('never opens the circuit, however many calls it refuses', () => {
    const breaker = new CircuitBreaker({ enabled: true, failureThreshold: 2, windowMs: 60_000, cooldownMs: 1_000 })
    for (let i = 0; i < 10; i++) {
      assert.equal(breaker.admit().allowed, true)
      breaker.record(breakerVerdict(refused(401)), false)
    }
    assert.equal(breaker.state, 'closed')
    assert.equal(breaker.failures, 0)
  })

  it('is recognised as SB_ERR_UPSTREAM_AUTH, as a WebSocket upgrade status or as an SDK error status', () => {
    assert.equal(isAuthFailure(refused(401)), true)
    assert.equal(isAuthFailure(new WebSocketUpgradeError(401, 'rejected with HTTP 401')), true)
    assert.equal(isAuthFailure(new WebSocketUpgradeError(403, 'rejected with HTTP 403')), true)
    assert.equal(isAuthFailure(new WebSocketUpgradeError(500, 'rejected with HTTP 500')), false)
    assert.equal(isAuthFailure(new SwitchboardError('SB_ERR_UPSTREAM_HTTP', 'x', { details: { status: 500 } })), false)
    assert.equal(isAuthFailure(undefined), false)
  })

  it('fails only the request it answered when the SDK transport reports it', () => {
    for (const status of [401, 403]) {
      const failure = classifySendFailure(Object.assign(new Error(`Error POSTing to endpoint (HTTP ${status}): denied`), { status }))
      assert.equal(failure.lost, false)
      assert.equal(failure.error.code, 'SB_ERR_UPSTREAM_AUTH')
      assert.equal(failure.error.details.status, status)
    }
    assert.equal(classifySendFailure(new Error('Error POSTing to endpoint (HTTP 401): denied')).error.code, 'SB_ERR_UPSTREAM_AUTH')
    assert.equal(classifySendFailure(new Error('Error POSTing to endpoint (HTTP 400): bad')).error.code, 'SB_ERR_UPSTREAM_HTTP')
  })
})
