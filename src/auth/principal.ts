/** Who is calling: established once per request at the edge, bound to the session it opens. */
export interface Principal {
  readonly id: string
  readonly roles: readonly string[]
  /** How the principal was established; `none` when the gateway runs without auth. */
  readonly via: 'api-key' | 'jwt' | 'none'
}

/** Every caller when the config has no auth section (loopback only). */
export const ANONYMOUS: Principal = Object.freeze({ id: 'anonymous', roles: Object.freeze([]) as readonly string[], via: 'none' })

/** Same identity: a session opened by one principal is never used with another's credential. */
export function isSamePrincipal (a: Principal, b: Principal): boolean {
  return a.id === b.id && a.via === b.via
}

/**
 * Who really made a request when it is not the principal itself: the admin API acting as one
 * (POST /admin/tools/call). Audit lines and the call feed carry it, so such a call never reads as
 * the principal's own.
 */
export interface Actor {
  readonly via: 'admin'
  /** The principal's id the admin acted as. */
  readonly as: string
}
