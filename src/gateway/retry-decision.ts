import { isSwitchboardError } from '../errors.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import { isCircuitOpen } from '../upstream/circuit-breaker.ts'

/** No retry starts with less than this left of the call's deadline: it could not finish anyway. */
export const MIN_ATTEMPT_MS = 50

export interface RetryInput {
  err: unknown
  /** The attempt that just failed, from 1. */
  attempt: number
  maxAttempts: number
  backoffMs: number
  /** Whether the tool says repeating it is harmless (see isRetrySafeTool). */
  safe: boolean
  /** What is left of the call's deadline now. */
  remainingMs: number
  aborted: boolean
  random?: () => number
}

export type RetryDecision =
  | { retry: true, delayMs: number }
  | { retry: false, reason: 'cancelled' | 'unsafe_tool' | 'circuit_open' | 'not_retryable' | 'attempts' | 'deadline' }

/** A tool whose definition says running it twice does no harm: read-only or idempotent. */
export function isRetrySafeTool (definition: Readonly<Record<string, unknown>>): boolean {
  const annotations = definition.annotations
  return isRecord(annotations) && (annotations.readOnlyHint === true || annotations.idempotentHint === true)
}

/**
 * Whether a failed attempt is tried again, and after how long. Only failures of the connection
 * qualify (not connected, connection lost or send failed): a timeout may have run the call, and a
 * tool error, a JSON-RPC error or an HTTP status is the upstream's answer. The backoff doubles per
 * attempt with jitter (half fixed, half random), and the retry must still have MIN_ATTEMPT_MS of the
 * deadline left once the backoff is over.
 */
export function retryDecision (input: RetryInput): RetryDecision {
  const { err, attempt } = input
  if (input.aborted) return { retry: false, reason: 'cancelled' }
  if (!input.safe) return { retry: false, reason: 'unsafe_tool' }
  if (isCircuitOpen(err)) return { retry: false, reason: 'circuit_open' }
  if (!isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE') && !isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED')) return { retry: false, reason: 'not_retryable' }
  if (attempt >= input.maxAttempts) return { retry: false, reason: 'attempts' }
  const ceiling = input.backoffMs * 2 ** Math.min(attempt - 1, 20)
  const delayMs = Math.round(ceiling / 2 + (input.random ?? Math.random)() * ceiling / 2)
  if (input.remainingMs - delayMs < MIN_ATTEMPT_MS) return { retry: false, reason: 'deadline' }
  return { retry: true, delayMs }
}
