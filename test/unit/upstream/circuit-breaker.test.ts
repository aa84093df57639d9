import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { SwitchboardError } from '../../../src/errors.ts'
import { RpcError } from '../../../src/protocol/json-rpc.ts'
import { CircuitBreaker, breakerVerdict, circuitOpenError, isCircuitOpen, isConnectionOutage, type CircuitTransition } from '../../../src/upstream/circuit-breaker.ts'

const CONFIG = { enabled: true, failureThreshold: 3, windowMs: 1000, cooldownMs: 500 }

function breaker (config = CONFIG) {
  const clock = { now: 0 }
  const transitions: CircuitTransition[] = []
  const b = new CircuitBreaker(config, { now: () => clock.now, onTransition: (t) => { transitions.push(t) } })
  return { b, clock, transitions }
}

function fail (b: CircuitBreaker, times = 1): void {
  for (let i = 0; i < times; i++) {
    const admission = b.admit()
    assert.equal(admission.allowed, true)
    b.record('failure', admission.allowed && admission.probe)
  }
}

describe('circuit breaker', () => {
  it('opens after failureThreshold consecutive failures within the window and then refuses with the time left', () => {
    const { b, clock, transitions } = breaker()
    fail(b, 2)
    assert.equal(b.state, 'closed')
    clock.now = 100
    fail(b)
    assert.equal(b.state, 'open')
    assert.deepEqual(transitions, [{ from: 'closed', to: 'open', failures: 3 }])
    clock.now = 300
    assert.deepEqual(b.admit(), { allowed: false, state: 'open', retryAfterMs: 300 })
  })

  it('does not open when the failures are spread wider than windowMs', () => {
    const { b, clock } = breaker()
    fail(b)
    clock.now = 600
    fail(b)
    clock.now = 1200 // the first failure has left the window
    fail(b)
    assert.equal(b.state, 'closed')
    assert.equal(b.failures, 2)
    clock.now = 1300
    fail(b)
    assert.equal(b.state, 'open')
  })

  it('resets the consecutive count on any success', () => {
    const { b } = breaker()
    fail(b, 2)
    const admission = b.admit()
    assert.equal(admission.allowed, true)
    b.record('success', false)
    assert.equal(b.failures, 0)
    fail(b, 2)
    assert.equal(b.state, 'closed')
  })

  it('ignores neutral outcomes (client cancelled, HTTP 4xx): they neither count nor reset', () => {
    const { b } = breaker()
    fail(b, 2)
    b.admit()
    b.record('neutral', false)
    assert.equal(b.failures, 2)
    fail(b)
    assert.equal(b.state, 'open')
  })

  it('goes half-open after cooldownMs and lets exactly one probe through', () => {
    const { b, clock, transitions } = breaker()
    fail(b, 3)
    clock.now = 499
    assert.equal(b.admit().allowed, false)
    clock.now = 500
    assert.equal(b.state, 'half_open')
    assert.deepEqual(b.admit(), { allowed: true, probe: true })
    const meanwhile = b.admit()
    assert.equal(meanwhile.allowed, false, 'others fail fast while the probe runs')
    assert.equal(!meanwhile.allowed && meanwhile.state, 'half_open')
    assert.deepEqual(transitions.map(t => t.to), ['open', 'half_open'])
  })

  it('closes when the probe succeeds', () => {
    const { b, clock, transitions } = breaker()
    fail(b, 3)
    clock.now = 600
    assert.deepEqual(b.admit(), { allowed: true, probe: true })
    b.record('success', true)
    assert.equal(b.state, 'closed')
    assert.deepEqual(b.admit(), { allowed: true, probe: false })
    assert.deepEqual(transitions.map(t => t.to), ['open', 'half_open', 'closed'])
  })

  it('re-opens for another full cooldown when the probe fails', () => {
    const { b, clock, transitions } = breaker()
    fail(b, 3)
    clock.now = 600
    fail(b)
    assert.equal(b.state, 'open')
    assert.deepEqual(transitions.at(-1), { from: 'half_open', to: 'open', failures: 1 })
    clock.now = 1000
    assert.deepEqual(b.admit(), { allowed: false, state: 'open', retryAfterMs: 100 })
    clock.now = 1100
    assert.equal(b.admit().allowed, true)
  })

  it('lets another probe through when the probe ended without a verdict', () => {
    const { b, clock } = breaker()
    fail(b, 3)
    clock.now = 600
    assert.equal(b.admit().allowed, true)
    b.record('neutral', true)
    assert.equal(b.state, 'half_open')
    assert.deepEqual(b.admit(), { allowed: true, probe: true })
  })

  it('leaves an open or half-open circuit to its probe: late answers of earlier requests do not move it', () => {
    const { b, clock } = breaker()
    fail(b, 3)
    b.record('success', false)
    assert.equal(b.state, 'open')
    clock.now = 600
    b.admit()
    b.record('failure', false)
    b.record('success', false)
    assert.equal(b.state, 'half_open')
  })

  it('counts a lost connection or a failed attempt to open one as one failure each', () => {
    const { b, transitions } = breaker()
    b.connectionFailed()
    b.connectionFailed()
    assert.equal(b.failures, 2)
    assert.equal(b.state, 'closed')
    b.connectionFailed()
    assert.equal(b.state, 'open')
    assert.deepEqual(transitions, [{ from: 'closed', to: 'open', failures: 3 }])
  })

  it('leaves a half-open circuit to its probe when a connection fails meanwhile', () => {
    const { b, clock } = breaker()
    fail(b, 3)
    clock.now = 600
    assert.deepEqual(b.admit(), { allowed: true, probe: true })
    b.connectionFailed()
    assert.equal(b.state, 'half_open')
  })

  it('closes at once, with its failures forgotten, when a connection comes back healthy', () => {
    const { b, clock, transitions } = breaker()
    fail(b, 3)
    clock.now = 100
    b.recovered()
    assert.equal(b.state, 'closed')
    assert.deepEqual(transitions.at(-1), { from: 'open', to: 'closed', failures: 0, reason: 'reconnected' })
    assert.deepEqual(b.admit(), { allowed: true, probe: false })
    fail(b, 2)
    assert.equal(b.state, 'closed', 'the count started again from zero')
  })

  it('closes a half-open circuit too, and a late failed probe then leaves it closed', () => {
    const { b, clock } = breaker()
    fail(b, 3)
    clock.now = 600
    const probe = b.admit()
    b.recovered()
    assert.equal(b.state, 'closed')
    b.record('failure', probe.allowed && probe.probe)
    assert.equal(b.state, 'closed')
    assert.equal(b.failures, 0)
  })

  it('forgets the failures counted so far when a connection comes back healthy while closed, without a transition', () => {
    const { b, transitions } = breaker()
    fail(b, 2)
    b.recovered()
    assert.equal(b.failures, 0)
    assert.deepEqual(transitions, [])
  })
})

describe('breakerVerdict', () => {
  it('counts timeouts, absent or lost connections and HTTP 5xx as failures', () => {
    for (const code of ['SB_ERR_UPSTREAM_TIMEOUT', 'SB_ERR_UPSTREAM_UNAVAILABLE', 'SB_ERR_UPSTREAM_CLOSED'] as const) {
      assert.equal(breakerVerdict(new SwitchboardError(code)), 'failure', code)
    }
    assert.equal(breakerVerdict(new SwitchboardError('SB_ERR_UPSTREAM_HTTP', 'bad gateway', { details: { status: 502 } })), 'failure')
  })

  it('counts a JSON-RPC error as the upstream answering, and HTTP 4xx or other errors as neither', () => {
    assert.equal(breakerVerdict(new RpcError(-32602, 'bad params')), 'success')
    assert.equal(breakerVerdict(new SwitchboardError('SB_ERR_UPSTREAM_HTTP', 'not found', { details: { status: 404 } })), 'neutral')
    assert.equal(breakerVerdict(new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL')), 'neutral')
    assert.equal(breakerVerdict(new SwitchboardError('SB_ERR_SESSION_LIMIT')), 'neutral')
    assert.equal(breakerVerdict(new Error('boom')), 'neutral')
  })

  it('does not count the gateway\'s own circuit refusal as the upstream failing', () => {
    assert.equal(breakerVerdict(circuitOpenError('web', { state: 'open', retryAfterMs: 250 })), 'neutral')
  })

  it('tells failures of the connection (lost, not back from a restart) from those of a call', () => {
    assert.equal(isConnectionOutage(new SwitchboardError('SB_ERR_UPSTREAM_CLOSED')), true)
    assert.equal(isConnectionOutage(new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE')), true)
    assert.equal(isConnectionOutage(circuitOpenError('web', { state: 'open', retryAfterMs: 250 })), false)
    assert.equal(isConnectionOutage(new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT')), false)
    assert.equal(isConnectionOutage(new SwitchboardError('SB_ERR_UPSTREAM_HTTP', 'bad gateway', { details: { status: 502 } })), false)
  })

  it('tells a circuit refusal apart from a plain unavailable upstream', () => {
    const refusal = circuitOpenError('web', { state: 'open', retryAfterMs: 250 })
    assert.equal(refusal.code, 'SB_ERR_UPSTREAM_UNAVAILABLE')
    assert.equal(isCircuitOpen(refusal), true)
    assert.equal(isCircuitOpen(new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE')), false)
  })
})
