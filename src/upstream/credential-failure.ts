import { type ErrorCode, SwitchboardError, isSwitchboardError } from '../errors.ts'

/**
 * Failures that say a request could not be made with a usable credential, not that the upstream is
 * in trouble: the token exchange or refresh refused (or backed off after a refusal), the caller's
 * account not connected (or the grant gone), no token to be had from the vault right now, no OAuth
 * client at the authorization server, and the upstream refusing the credential (HTTP 401/403).
 */
const CREDENTIAL_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'SB_ERR_UPSTREAM_TOKEN',
  'SB_ERR_UPSTREAM_CONNECT_REQUIRED',
  'SB_ERR_UPSTREAM_AUTH',
  'SB_ERR_TOKEN_STORE_UNAVAILABLE',
  'SB_ERR_UPSTREAM_OAUTH_CLIENT'
])

/**
 * The upstream refused the credential (HTTP 401/403, as SB_ERR_UPSTREAM_AUTH, or a WebSocket
 * upgrade's status).
 */
export function isAuthFailure (err: unknown): boolean {
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_AUTH')) return true
  const status = typeof err === 'object' && err !== null ? (err as { status?: unknown }).status : undefined
  return status === 401 || status === 403
}

/**
 * The upstream answered HTTP 401: the credential it was sent is no longer good (403 is a refusal,
 * not an expiry), and nobody renewed it for this failure yet (see afterRenewal).
 */
export function isUnauthorized (err: unknown): boolean {
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_AUTH')) return err.details.status === 401 && err.details.renewed !== true
  return typeof err === 'object' && err !== null && (err as { status?: unknown }).status === 401
}

/** A 401 that stands although the credential was renewed once: nobody renews it again. */
export function afterRenewal (err: unknown): unknown {
  if (!isUnauthorized(err)) return err
  const message = err instanceof Error ? err.message : 'the upstream refused the credential (HTTP 401)'
  return new SwitchboardError('SB_ERR_UPSTREAM_AUTH', message, { cause: err, details: { status: 401, renewed: true } })
}

/**
 * The one place that tells a credential's failure from the upstream's own. A credential failure is
 * the caller's (or, on the upstream's own connection, its configured credential's): it never
 * counts toward the upstream's circuit breaker, and a connection that acts for a caller closes on
 * it instead of reconnecting in the background (see UpstreamConnection). Everything else that goes
 * wrong on the way (refused connects, timeouts, lost streams, 5xx) is the upstream's.
 */
export function isCredentialFailure (err: unknown): boolean {
  return (isSwitchboardError(err) && CREDENTIAL_CODES.has(err.code)) || isAuthFailure(err)
}
