// Wrong admin tokens per remote address, whether sent to POST /admin/login or as a bearer token on
// any admin route: one count. Past the free failures an address is slowed down, not locked out:
// each further failure holds it back twice as long as the one before (capped), and while it waits
// its wrong tokens are answered 429 and not counted. The right token is never held back, so a
// process that shares an operator's address (127.0.0.1, a proxy) cannot keep the operator out.
// The state sits behind a small store, in memory here; a shared one (Redis) is a second store.

export const ADMIN_FREE_FAILURES = 10
export const ADMIN_THROTTLE_BASE_DELAY_MS = 1_000
export const ADMIN_THROTTLE_MAX_DELAY_MS = 30_000
/** An address's failures are forgotten this long after its last one. */
export const ADMIN_THROTTLE_FORGET_MS = 60_000
export const MAX_THROTTLED_ADMIN_ADDRESSES = 10_000

/** One address's failures: how many, the last one's time, and until when it is held back (0: not). */
export interface ThrottleRecord { failures: number, lastFailureAt: number, blockedUntil: number }

/**
 * Where the throttle keeps its records. Async, so a shared store can sit behind it; `fail` counts
 * and sets the hold in one step (a Redis store: one script), so replicas agree on the count.
 */
export interface AdminThrottleStore {
  /** The address's record, or undefined when it has none (or it was forgotten). */
  read: (address: string, now: number) => Promise<ThrottleRecord | undefined>
  /** Counts one failure and holds the address for `delayFor(failures)` ms from now; the new record. */
  fail: (address: string, now: number, delayFor: (failures: number) => number) => Promise<ThrottleRecord>
}

export interface AdminThrottleOptions {
  freeFailures?: number
  baseDelayMs?: number
  maxDelayMs?: number
  store?: AdminThrottleStore
}

export interface AdminThrottle {
  /** Milliseconds until a wrong token from `address` is looked at again; 0: now. */
  retryAfterMs: (address: string) => Promise<number>
  /** A wrong token from `address` (not while it is held back). */
  failed: (address: string) => Promise<void>
}

/** How long the failure numbered `failures` holds its address back: 0 for the free ones, then base × 2^k up to the cap. */
export function throttleDelayMs (failures: number, freeFailures: number, baseDelayMs: number, maxDelayMs: number): number {
  if (failures < freeFailures) return 0
  // 2^k overflows to Infinity long before k matters; the cap holds it.
  return Math.min(maxDelayMs, baseDelayMs * 2 ** (failures - freeFailures))
}

export interface MemoryThrottleStoreOptions {
  forgetMs?: number
  maxEntries?: number
}

/** Records in a Map, oldest evicted first past `maxEntries`: a flood of addresses never grows memory without end. */
export function createMemoryThrottleStore (options: MemoryThrottleStoreOptions = {}): AdminThrottleStore & { readonly size: number } {
  const forgetMs = options.forgetMs ?? ADMIN_THROTTLE_FORGET_MS
  const maxEntries = options.maxEntries ?? MAX_THROTTLED_ADMIN_ADDRESSES
  const records = new Map<string, ThrottleRecord>()

  function live (address: string, now: number): ThrottleRecord | undefined {
    const record = records.get(address)
    if (record === undefined) return undefined
    if (now < record.blockedUntil || now - record.lastFailureAt < forgetMs) return record
    records.delete(address)
    return undefined
  }

  return {
    async read (address, now) {
      const record = live(address, now)
      return record === undefined ? undefined : { ...record }
    },
    async fail (address, now, delayFor) {
      const record = live(address, now) ?? { failures: 0, lastFailureAt: now, blockedUntil: 0 }
      record.failures++
      record.lastFailureAt = now
      const delayMs = delayFor(record.failures)
      if (delayMs > 0) record.blockedUntil = now + delayMs
      // Re-inserted: the Map's order stays the order of last failures, so eviction takes the quietest.
      records.delete(address)
      for (const oldest of records.keys()) {
        if (records.size < maxEntries) break
        records.delete(oldest)
      }
      records.set(address, record)
      return { ...record }
    },
    get size () { return records.size }
  }
}

export function createAdminThrottle (options: AdminThrottleOptions = {}, now: () => number = Date.now): AdminThrottle {
  const freeFailures = options.freeFailures ?? ADMIN_FREE_FAILURES
  const baseDelayMs = options.baseDelayMs ?? ADMIN_THROTTLE_BASE_DELAY_MS
  const maxDelayMs = options.maxDelayMs ?? ADMIN_THROTTLE_MAX_DELAY_MS
  const store = options.store ?? createMemoryThrottleStore()
  const delayFor = (failures: number): number => throttleDelayMs(failures, freeFailures, baseDelayMs, maxDelayMs)
  return {
    async retryAfterMs (address) {
      const at = now()
      const record = await store.read(address, at)
      return record === undefined || record.blockedUntil <= at ? 0 : record.blockedUntil - at
    },
    async failed (address) {
      await store.fail(address, now(), delayFor)
    }
  }
}
