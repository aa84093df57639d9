import type { CircuitBreakerConfig } from '../config/resilience-schema.ts'
import { SwitchboardError, isSwitchboardError } from '../errors.ts'
import { RpcError } from '../protocol/json-rpc.ts'
import { isCredentialFailure } from './credential-failure.ts'

export { isAuthFailure, isCredentialFailure } from './credential-failure.ts'

export type CircuitState = 'closed' | 'open' | 'half_open'
export const CIRCUIT_STATES: readonly CircuitState[] = ['closed', 'open', 'half_open']

/** `reason`: set when a connection, not a call, moved it ('reconnected': it came back healthy). */
export interface CircuitTransition { from: CircuitState, to: CircuitState, failures: number, reason?: 'reconnected' }

export type Admission =
  | { allowed: true, probe: boolean }
  | { allowed: false, state: CircuitState, retryAfterMs: number }

/** What a finished request says about the upstream's health. */
export type Verdict = 'success' | 'failure' | 'neutral'

export interface CircuitBreakerOptions {
  now?: () => number
  onTransition?: (transition: CircuitTransition) => void
}

/**
 * One upstream's circuit: closed until `failureThreshold` consecutive failures fall within
 * `windowMs`, then open (every request refused) for `cooldownMs`, then half-open: one probe
 * request goes through while the others are still refused; its success closes the circuit, its
 * failure opens it for another cooldown. Open → half-open happens when the state is next looked
 * at, so the class needs no timer. Only the probe decides a half-open circuit: late answers to
 * requests admitted earlier reset the failure count but never move the state.
 *
 * The upstream's connections report too: each loss of a connection or failed attempt to open one
 * is one failure (however many calls it cut: those calls count nothing themselves, see `forward`;
 * a credential's failure is no failure of the upstream, see isCredentialFailure),
 * and a connection that comes back connected and initialized closes the circuit at once.
 */
export class CircuitBreaker {
  readonly #config: CircuitBreakerConfig
  readonly #now: () => number
  readonly #onTransition: (transition: CircuitTransition) => void
  #state: CircuitState = 'closed'
  /** Times of the current run of consecutive failures, at most failureThreshold of them. */
  #failures: number[] = []
  #openUntil = 0
  #probing = false

  constructor (config: CircuitBreakerConfig, options: CircuitBreakerOptions = {}) {
    this.#config = config
    this.#now = options.now ?? Date.now
    this.#onTransition = options.onTransition ?? (() => {})
  }

  get state (): CircuitState {
    if (this.#state === 'open' && this.#now() >= this.#openUntil) this.#move('half_open', 0)
    return this.#state
  }

  /** Consecutive failures counted so far (within the window). */
  get failures (): number {
    return this.#failures.length
  }

  /** Asks to send one request. An admitted request must later be settled with `record`. */
  admit (): Admission {
    const state = this.state
    if (state === 'closed') return { allowed: true, probe: false }
    if (state === 'half_open' && !this.#probing) {
      this.#probing = true
      return { allowed: true, probe: true }
    }
    // While a probe runs, its outcome is unknown: the worst case is another cooldown.
    const retryAfterMs = state === 'open' ? this.#openUntil - this.#now() : this.#config.cooldownMs
    return { allowed: false, state, retryAfterMs: Math.max(1, Math.ceil(retryAfterMs)) }
  }

  record (verdict: Verdict, probe: boolean): void {
    if (probe) this.#probing = false
    if (verdict === 'success') {
      this.#failures = []
      if (probe && this.#state === 'half_open') this.#move('closed', 0)
      return
    }
    if (verdict === 'neutral') return
    if (probe) {
      if (this.#state === 'half_open') this.#open(1)
      return
    }
    if (this.#state !== 'closed') return
    const now = this.#now()
    this.#failures = this.#failures.filter(at => now - at < this.#config.windowMs)
    this.#failures.push(now)
    if (this.#failures.length > this.#config.failureThreshold) this.#failures.shift()
    if (this.#failures.length >= this.#config.failureThreshold) this.#open(this.#failures.length)
  }

  /**
   * A connection to the upstream was lost or an attempt to open one failed: one failure, counted
   * like a call's while the circuit is closed. An open or half-open circuit is left to its probe.
   */
  connectionFailed (): void {
    this.record('failure', false)
  }

  /** A connection came back connected and initialized: the upstream is healthy again. */
  recovered (): void {
    this.#failures = []
    if (this.state === 'closed') return
    this.#move('closed', 0, 'reconnected')
  }

  #open (failures: number): void {
    this.#openUntil = this.#now() + this.#config.cooldownMs
    this.#failures = []
    this.#move('open', failures)
  }

  #move (to: CircuitState, failures: number, reason?: 'reconnected'): void {
    const from = this.#state
    this.#state = to
    this.#onTransition(reason === undefined ? { from, to, failures } : { from, to, failures, reason })
  }
}

/**
 * How an outcome counts for the breaker. Failures are what says the upstream itself is in
 * trouble: no answer in time, not connected, connection lost, or an HTTP 5xx. A JSON-RPC error is
 * an answer, so the upstream is alive. Anything else (HTTP 4xx, a protocol slip) says neither, and
 * neither does a credential's failure (isCredentialFailure: one caller's refused exchange, missing
 * grant or 401 must not open the circuit for everyone).
 */
export function breakerVerdict (err: unknown): Verdict {
  // (The gateway's own refusal is not the upstream failing again.)
  if (isCircuitOpen(err) || isCredentialFailure(err)) return 'neutral'
  if (err instanceof RpcError) return 'success'
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TIMEOUT') || isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE') || isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED')) return 'failure'
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_HTTP')) {
    const status = err.details.status
    return typeof status === 'number' && status >= 500 ? 'failure' : 'neutral'
  }
  return 'neutral'
}

/**
 * A failure that comes from the connection rather than from the call: it was lost under the call,
 * or is down (restarting) and did not come back within the call's time. Its connection reports it
 * to the breaker once; the calls it failed must not count it again.
 */
export function isConnectionOutage (err: unknown): boolean {
  return isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED') || (isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE') && !isCircuitOpen(err))
}

/** The refusal of a request by an open circuit: SB_ERR_UPSTREAM_UNAVAILABLE, never sent. */
export function circuitOpenError (upstream: string, refusal: { state: CircuitState, retryAfterMs: number }): SwitchboardError {
  return new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE', `circuit of upstream ${upstream} is ${refusal.state === 'open' ? 'open' : 'half-open with a probe under way'}`, {
    details: { circuit: refusal.state, retryAfterMs: refusal.retryAfterMs }
  })
}

export function isCircuitOpen (err: unknown): err is SwitchboardError & { details: { circuit: CircuitState, retryAfterMs: number } } {
  return isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE') && typeof err.details.circuit === 'string' && typeof err.details.retryAfterMs === 'number'
}
