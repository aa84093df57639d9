import type { AuthConfig } from '../config/access-schema.ts'
import { createApiKeyVerifier } from './api-keys.ts'
import type { JwtConfig, JwtOutcome, KeySourceLog } from './jwt-verifier.ts'
import { ANONYMOUS, type Principal } from './principal.ts'
import { metadataUrl } from './protected-resource.ts'

export type AuthFailureReason = 'missing' | 'malformed' | 'unknown_key' | 'invalid_token' | 'expired' | 'unavailable'

export type AuthOutcome =
  | { ok: true, principal: Principal, /** a JWT's verified claims */ claims?: Readonly<Record<string, unknown>> }
  | { ok: false, status: 401 | 503, reason: AuthFailureReason, message: string, headers: Record<string, string> }

export interface Authenticator {
  readonly enabled: boolean
  /** Only the Authorization header is ever looked at: tokens in the query string are never read. */
  authenticate (authorization: string | string[] | undefined): Promise<AuthOutcome> | AuthOutcome
}

/** Seconds a client is asked to wait when the identity provider's keys cannot be fetched. */
export const UNAVAILABLE_RETRY_AFTER_S = 5

const REALM = 'Bearer realm="switchboard"'
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/
const NOT_BEARER = 0
const BAD_BEARER = 1
const BEARER = 'bearer'

const ANONYMOUS_OUTCOME: AuthOutcome = Object.freeze({ ok: true, principal: ANONYMOUS })
const DISABLED: Authenticator = Object.freeze({ enabled: false, authenticate: () => ANONYMOUS_OUTCOME })

/** `Bearer <token>`: the scheme in any case, one or more spaces, exactly one token with no whitespace. */
function parseBearer (header: string): string | typeof NOT_BEARER | typeof BAD_BEARER {
  const n = header.length
  if (n < BEARER.length) return NOT_BEARER
  for (let i = 0; i < BEARER.length; i++) {
    if ((header.charCodeAt(i) | 0x20) !== BEARER.charCodeAt(i)) return NOT_BEARER
  }
  if (n === BEARER.length) return BAD_BEARER
  let i = BEARER.length
  if (header.charCodeAt(i) !== 32) return NOT_BEARER // "Bearerx" is some other scheme
  while (i < n && header.charCodeAt(i) === 32) i++
  if (i === n) return BAD_BEARER
  const token = header.slice(i)
  return /\s/.test(token) ? BAD_BEARER : token
}

/** A quoted-string for an auth-param (RFC 9110 §11.2): quote and backslash are escaped. */
function quoted (value: string): string {
  return `"${value.replace(/["\\]/g, '\\$&')}"`
}

function freezeOutcome (outcome: AuthOutcome): AuthOutcome {
  if (!outcome.ok) Object.freeze(outcome.headers)
  return Object.freeze(outcome)
}

/**
 * Who is calling, from the Authorization header. Without an auth section everyone is ANONYMOUS
 * (synchronously). Otherwise API keys are tried first (synchronous); a JWT-shaped token then goes to the
 * JWT verifier when jwt is configured. Failures carry the RFC 6750 challenge; a key source that cannot
 * be reached is a 503, as the client's token is not at fault (and `log` hears of the outage, once).
 */
export function createAuthenticator (auth: AuthConfig | undefined, log?: KeySourceLog): Authenticator {
  if (auth === undefined) return DISABLED
  const verifyKey = auth.apiKeys.length > 0 ? createApiKeyVerifier(auth.apiKeys) : undefined
  const verifyJwt = auth.jwt === undefined ? undefined : lazyJwtVerifier(auth.jwt, log)
  const url = metadataUrl(auth)
  const tail = (url === undefined ? '' : `, resource_metadata=${quoted(url)}`) +
    (auth.scopes.length > 0 ? `, scope=${quoted(auth.scopes.join(' '))}` : '')

  const unauthorized = (reason: AuthFailureReason, message: string, error?: 'invalid_request' | 'invalid_token', description?: string): AuthOutcome => {
    const params = error === undefined ? '' : `, error="${error}", error_description=${quoted(description ?? message)}`
    return freezeOutcome({ ok: false, status: 401, reason, message, headers: { 'www-authenticate': REALM + params + tail } })
  }
  // RFC 6750 §3.1: no error code when the request carries no bearer credential at all.
  const missing = unauthorized('missing', 'Unauthorized: send Authorization: Bearer <token>')
  const otherScheme = unauthorized('malformed', 'Unauthorized: the Authorization header must use the Bearer scheme')
  const malformed = unauthorized('malformed', 'Unauthorized: the Authorization header must be one "Bearer <token>"',
    'invalid_request', 'the Authorization header must carry exactly one bearer token')
  const unknownKey = unauthorized('unknown_key', 'Unauthorized: unknown API key', 'invalid_token', 'unknown API key')
  const notJwt = unauthorized('invalid_token', 'Unauthorized: the token is not a JWT', 'invalid_token', 'the token is not a JWT')
  const unavailable = freezeOutcome({
    ok: false,
    status: 503,
    reason: 'unavailable',
    message: 'Service Unavailable: the identity provider\'s signing keys cannot be fetched; try again later',
    headers: { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) }
  })

  // One outcome object per principal and per refusal text, so a request allocates none.
  const accepted = new Map<Principal, AuthOutcome>()
  const acceptedFor = (principal: Principal): AuthOutcome => {
    let outcome = accepted.get(principal)
    if (outcome === undefined) {
      outcome = Object.freeze({ ok: true, principal })
      if (principal.via === 'api-key') accepted.set(principal, outcome) // JWT principals are new objects each time
    }
    return outcome
  }
  const refusals = new Map<string, AuthOutcome>()
  const fromJwt = (result: JwtOutcome): AuthOutcome => {
    // JWT outcomes are not shared (a new principal each time), so they carry their own claims.
    if (result.ok) return Object.freeze({ ok: true, principal: result.principal, claims: result.claims })
    if (result.reason === 'unavailable') return unavailable
    const key = `${result.reason}\0${result.description}`
    let outcome = refusals.get(key)
    if (outcome === undefined) {
      outcome = unauthorized(result.reason, `Unauthorized: ${result.description}`, 'invalid_token', result.description)
      refusals.set(key, outcome)
    }
    return outcome
  }

  return Object.freeze({
    enabled: true,
    authenticate (authorization: string | string[] | undefined): Promise<AuthOutcome> | AuthOutcome {
      if (authorization === undefined || authorization === '') return missing
      if (typeof authorization !== 'string') return malformed
      const token = parseBearer(authorization)
      if (token === NOT_BEARER) return otherScheme
      if (token === BAD_BEARER) return malformed
      if (verifyKey !== undefined) {
        const principal = verifyKey(token)
        if (principal !== undefined) return acceptedFor(principal)
      }
      if (verifyJwt !== undefined && JWT_SHAPE.test(token)) return verifyJwt(token).then(fromJwt)
      return verifyKey === undefined ? notJwt : unknownKey
    }
  })
}

/**
 * The JWT verifier, loaded with jose on first use: a gateway without OAuth never loads it (about
 * 10 MB of resident memory), and verification is asynchronous anyway.
 */
function lazyJwtVerifier (config: JwtConfig, log: KeySourceLog | undefined): (token: string) => Promise<JwtOutcome> {
  let verifier: Promise<(token: string) => Promise<JwtOutcome>> | undefined
  return async (token) => {
    verifier ??= import('./jwt-verifier.ts').then(m => m.createJwtVerifier(config, log))
    return await (await verifier)(token)
  }
}
