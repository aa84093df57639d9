import type { CancelSignal } from '../protocol/cancel-signal.ts'
import { retryDecision } from './retry-decision.ts'

export interface RetryOptions {
  maxAttempts: number
  backoffMs: number
  /** Whether the operation is safe to repeat at all. */
  safe: boolean
  /** The whole call's deadline, counted from the first attempt; each attempt gets what is left. */
  timeoutMs: number
  signal: CancelSignal
  /** A retry is about to wait `delayMs`, after attempt `attempt` failed with `err`. */
  onRetry?: (attempt: number, delayMs: number, err: unknown) => void
  /** A retry (not the first attempt) finished. */
  onRetried?: (outcome: 'ok' | 'failed') => void
  now?: () => number
  random?: () => number
}

const monotonicNow = (): number => performance.now()

/**
 * Runs `attempt` until it succeeds or retryDecision says stop; the last failure is rethrown as is.
 * A client that cancels during the backoff ends the wait at once.
 */
export function withRetries<T> (attempt: (timeoutMs: number) => Promise<T>, options: RetryOptions): Promise<T> {
  // The first attempt is the attempt's own promise, without an async frame around it: this runs on
  // every call, and retries are the exception.
  if (!options.safe || options.maxAttempts <= 1) return attempt(options.timeoutMs)
  const now = options.now ?? monotonicNow
  const deadline = now() + options.timeoutMs
  return attempt(options.timeoutMs).catch(async (err: unknown) => await retryAfter(err, attempt, options, now, deadline))
}

async function retryAfter<T> (first: unknown, attempt: (timeoutMs: number) => Promise<T>, options: RetryOptions, now: () => number, deadline: number): Promise<T> {
  let err = first
  for (let n = 1; ; n++) {
    const decision = retryDecision({ ...options, err, attempt: n, remainingMs: deadline - now(), aborted: options.signal.aborted })
    if (!decision.retry) throw err
    options.onRetry?.(n, decision.delayMs, err)
    if (!await pause(decision.delayMs, options.signal)) throw err
    try {
      const result = await attempt(Math.max(1, Math.round(deadline - now())))
      options.onRetried?.('ok')
      return result
    } catch (next: unknown) {
      options.onRetried?.('failed')
      err = next
    }
  }
}

/** Waits `ms`; false at once if the signal aborts first. */
function pause (ms: number, signal: CancelSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false)
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer)
      resolve(false)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve(true)
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
