import { setTimeout as sleep } from 'node:timers/promises'
import { retryDecision } from './retry-decision.ts'

export interface RetryOptions {
  maxAttempts: number
  backoffMs: number
  /** Whether the operation is safe to repeat at all. */
  safe: boolean
  /** The whole call's deadline, counted from the first attempt; each attempt gets what is left. */
  timeoutMs: number
  signal: AbortSignal
  /** A retry is about to wait `delayMs`, after attempt `attempt` failed with `err`. */
  onRetry?: (attempt: number, delayMs: number, err: unknown) => void
  /** A retry (not the first attempt) finished. */
  onRetried?: (outcome: 'ok' | 'failed') => void
  now?: () => number
  random?: () => number
}

/**
 * Runs `attempt` until it succeeds or retryDecision says stop; the last failure is rethrown as is.
 * A client that cancels during the backoff ends the wait at once.
 */
export async function withRetries<T> (attempt: (timeoutMs: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const now = options.now ?? performance.now.bind(performance)
  const deadline = now() + options.timeoutMs
  for (let n = 1; ; n++) {
    try {
      const result = await attempt(n === 1 ? options.timeoutMs : Math.max(1, Math.round(deadline - now())))
      if (n > 1) options.onRetried?.('ok')
      return result
    } catch (err: unknown) {
      if (n > 1) options.onRetried?.('failed')
      const decision = retryDecision({ ...options, err, attempt: n, remainingMs: deadline - now(), aborted: options.signal.aborted })
      if (!decision.retry) throw err
      options.onRetry?.(n, decision.delayMs, err)
      try {
        await sleep(decision.delayMs, undefined, { signal: options.signal })
      } catch {
        throw err
      }
    }
  }
}
