export const BACKOFF_BASE_MS = 250
export const BACKOFF_MAX_MS = 30_000

/** Exponential backoff with full jitter: attempt 0 waits up to base, doubling to the cap. */
export function backoffDelayMs (attempt: number, random: () => number = Math.random, baseMs = BACKOFF_BASE_MS, maxMs = BACKOFF_MAX_MS): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30))
  return Math.round(ceiling / 2 + random() * ceiling / 2)
}
