export const BACKOFF_BASE_MS = 250
export const BACKOFF_MAX_MS = 30_000

/** Exponential backoff with full jitter: attempt 0 waits up to base, doubling to the cap. */
export function backoffDelayMs (attempt: number, random: () => number = Math.random, baseMs = BACKOFF_BASE_MS, maxMs = BACKOFF_MAX_MS): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 30))
  return Math.round(ceiling / 2 + random() * ceiling / 2)
}

/**
 * Attempts after a lost connection whose delay stays at most RECONNECT_FAST_MAX_MS: an upstream that
 * comes back (a crash and restart, a redeploy on the same address) is found again within a second
 * of listening, instead of after a delay that grew to several seconds while it was down. After
 * them the backoff goes on doubling from there to BACKOFF_MAX_MS.
 */
export const RECONNECT_FAST_ATTEMPTS = 10
export const RECONNECT_FAST_MAX_MS = 1_000
// The attempt whose plain backoff ceiling is RECONNECT_FAST_MAX_MS: where the doubling resumes.
const FAST_CEILING_ATTEMPT = Math.log2(RECONNECT_FAST_MAX_MS / BACKOFF_BASE_MS)

/** The delay before reconnect attempt `attempt` (0: the first after the loss). */
export function reconnectDelayMs (attempt: number, random: () => number = Math.random): number {
  if (attempt < RECONNECT_FAST_ATTEMPTS) return backoffDelayMs(attempt, random, BACKOFF_BASE_MS, RECONNECT_FAST_MAX_MS)
  return backoffDelayMs(attempt - RECONNECT_FAST_ATTEMPTS + FAST_CEILING_ATTEMPT + 1, random)
}
