import { createHash } from 'node:crypto'

/**
 * What was seen in the last `windowMs`, bounded in size: the same upstream message heard by several
 * replicas (each holds its own connection to the upstream) is handed on once. Keys are digests, so
 * a large message costs no more memory than a small one.
 */
export class SeenRecently {
  /** digest → when it may be seen again; insertion order is expiry order (one window for all). */
  private readonly seen = new Map<string, number>()
  private readonly windowMs: number
  private readonly max: number

  constructor (windowMs: number, max = 10_000) {
    this.windowMs = windowMs
    this.max = max
  }

  /** True the first time `parts` are seen within the window, and records them. */
  first (parts: readonly string[], now = Date.now()): boolean {
    const hash = createHash('sha256')
    for (const part of parts) hash.update(part).update('\0')
    const key = hash.digest('base64url')
    const until = this.seen.get(key)
    if (until !== undefined && until > now) return false
    this.seen.delete(key)
    this.seen.set(key, now + this.windowMs)
    for (const [old, expires] of this.seen) {
      if (expires > now && this.seen.size <= this.max) break
      this.seen.delete(old)
    }
    return true
  }
}
