// Failed console logins per remote address: past the limit within a window, every attempt from that
// address is refused (a right token too, so a guesser learns nothing while throttled). The map is
// bounded: a flood of addresses evicts the oldest entries, never grows memory without end.

export const LOGIN_FAILURES_PER_WINDOW = 10
export const LOGIN_WINDOW_MS = 60_000
export const MAX_THROTTLED_ADDRESSES = 10_000

export interface LoginThrottleOptions {
  maxFailures?: number
  windowMs?: number
  maxEntries?: number
  now?: () => number
}

export interface LoginThrottle {
  /** Milliseconds until `address` may try again, or 0 when it may now. */
  retryAfterMs: (address: string) => number
  failed: (address: string) => void
  /** A success clears the address's failures. */
  succeeded: (address: string) => void
  readonly size: number
}

interface Window { startedAt: number, failures: number }

export function createLoginThrottle (options: LoginThrottleOptions = {}): LoginThrottle {
  const maxFailures = options.maxFailures ?? LOGIN_FAILURES_PER_WINDOW
  const windowMs = options.windowMs ?? LOGIN_WINDOW_MS
  const maxEntries = options.maxEntries ?? MAX_THROTTLED_ADDRESSES
  const now = options.now ?? Date.now
  const windows = new Map<string, Window>()

  function current (address: string, at: number): Window | undefined {
    const window = windows.get(address)
    if (window === undefined) return undefined
    if (at - window.startedAt < windowMs) return window
    windows.delete(address)
    return undefined
  }

  function makeRoom (at: number): void {
    for (const [address, window] of windows) {
      if (windows.size < maxEntries) return
      // Oldest first (insertion order): expired ones go, and past the cap the oldest go anyway.
      if (at - window.startedAt >= windowMs || windows.size >= maxEntries) windows.delete(address)
    }
  }

  return {
    retryAfterMs (address) {
      const at = now()
      const window = current(address, at)
      if (window === undefined || window.failures < maxFailures) return 0
      return Math.max(1, window.startedAt + windowMs - at)
    },
    failed (address) {
      const at = now()
      const window = current(address, at)
      if (window !== undefined) {
        window.failures++
        return
      }
      makeRoom(at)
      windows.set(address, { startedAt: at, failures: 1 })
    },
    succeeded (address) {
      windows.delete(address)
    },
    get size () { return windows.size }
  }
}
