import { createHash } from 'node:crypto'
import type { Secret } from '../auth/secret.ts'
import { SwitchboardError, isSwitchboardError } from '../errors.ts'
import { BoundedMap } from './bounded-map.ts'

/** Refusals remembered at once (one per principal and upstream), beyond which the oldest is forgotten. */
export const MAX_REFUSALS = 10_000

interface Refusal {
  readonly until: number
  /** A digest of the credential that was refused (the subject token, the refresh token). */
  readonly credential: string
  readonly error: SwitchboardError
}

/**
 * Whether the authorization server answered and refused (an OAuth error, or an HTTP status),
 * rather than could not be reached: only a refusal is sure to be repeated for the same credential.
 */
export function isRefusal (err: unknown): err is SwitchboardError {
  return isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN') && (typeof err.details.oauthError === 'string' || typeof err.details.status === 'number')
}

function digest (credential: Secret | undefined): string {
  return credential === undefined ? '' : createHash('sha256').update(credential.reveal()).digest('base64url')
}

/**
 * The authorization server's refusals of a caller's credential (a token exchange, a refresh), per
 * (upstream, principal): after one, the same credential is not presented again for
 * `retryAfterRefusalMs`, and the caller's calls fail at once with the refusal's error code and when
 * to retry. A different credential (a fresh JWT, a grant from a new connect) is tried at once.
 * Bounded: at most MAX_REFUSALS are remembered, the oldest forgotten first.
 */
export class RefusalBackoff {
  readonly #refusals: BoundedMap<Refusal>
  readonly #now: () => number

  constructor (options: { max?: number, now?: () => number } = {}) {
    this.#refusals = new BoundedMap(options.max ?? MAX_REFUSALS)
    this.#now = options.now ?? Date.now
  }

  /** The error to fail with while a refusal of this same credential stands for `key`; undefined: try. */
  backingOff (key: string, credential: Secret | undefined): SwitchboardError | undefined {
    const refusal = this.#refusals.get(key)
    if (refusal === undefined) return undefined
    const leftMs = Math.ceil(refusal.until - this.#now())
    if (leftMs <= 0 || refusal.credential !== digest(credential)) {
      this.#refusals.delete(key)
      return undefined
    }
    const { error } = refusal
    return new SwitchboardError(error.code, `${error.message}; it is not asked again for this caller for another ${Math.ceil(leftMs / 1000)} s (retryAfterRefusalMs): retry then, or with a new credential`, {
      details: { ...error.details, retryAfterMs: leftMs }
    })
  }

  /** The authorization server refused `credential` for `key`: remembered for `forMs` (0: not at all). */
  refused (key: string, credential: Secret | undefined, error: SwitchboardError, forMs: number): void {
    if (forMs <= 0) return
    this.#refusals.set(key, { until: this.#now() + forMs, credential: digest(credential), error })
  }

  /** The credential worked (or was replaced): nothing stands for `key`. */
  clear (key: string): void {
    this.#refusals.delete(key)
  }
}
