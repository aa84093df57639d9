import { Secret } from '../auth/secret.ts'
import type { CredentialHeaders } from './credential-provider.ts'
import type { Grant } from './vault/token-vault.ts'

/** A token is renewed this long before it expires, or a tenth of its lifetime when that is shorter. */
export const RENEW_AHEAD_MS = 60_000

/** Epoch ms from which `grant` should be renewed; Infinity when the server gave no expiry. */
export function renewAt (grant: Grant): number {
  if (grant.expiresAt === undefined) return Number.POSITIVE_INFINITY
  const lifetime = Math.max(0, grant.expiresAt - grant.obtainedAt)
  return grant.expiresAt - Math.min(RENEW_AHEAD_MS, lifetime / 10)
}

/** Good to send and not yet due for renewal. */
export function isFresh (grant: Grant, now = Date.now()): boolean {
  return now < renewAt(grant)
}

/** Still accepted by the upstream (perhaps due for renewal): usable while the store is down. */
export function isLive (grant: Grant, now = Date.now()): boolean {
  return grant.expiresAt === undefined || now < grant.expiresAt
}

const headersOf = new WeakMap<Grant, CredentialHeaders>()

/** `Authorization: <type> <token>`, made once per grant so a send allocates nothing. */
export function bearerHeaders (grant: Grant): CredentialHeaders {
  let headers = headersOf.get(grant)
  if (headers === undefined) {
    headers = Object.freeze({ authorization: new Secret(`${grant.tokenType} ${grant.accessToken.reveal()}`) })
    headersOf.set(grant, headers)
  }
  return headers
}

/** The same token (compared without printing either). */
export function isSameToken (a: Grant | undefined, b: Grant | undefined): boolean {
  return a !== undefined && b !== undefined && a.accessToken.reveal() === b.accessToken.reveal()
}
