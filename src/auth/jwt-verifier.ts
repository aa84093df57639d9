import {
  createRemoteJWKSet, errors, jwksCache, jwtVerify,
  type CryptoKey, type JWKSCacheInput, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions, type JWTVerifyResult
} from 'jose'
import type { AuthConfig } from '../config/access-schema.ts'
import { redactUrl } from '../net/url-redaction.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import type { Principal } from './principal.ts'

export type JwtConfig = NonNullable<AuthConfig['jwt']>

export type JwtOutcome =
  | { ok: true, principal: Principal, /** exp, in epoch milliseconds */ expiresAt?: number, /** the verified payload, for policy conditions; never part of Principal */ claims: Readonly<Record<string, unknown>> }
  | { ok: false, reason: 'invalid_token' | 'expired' | 'unavailable', description: string }

/** After a token names an unknown kid, the JWKS is fetched again at most this often. */
export const JWKS_COOLDOWN_MS = 30_000

/**
 * An unknown kid refetches the JWKS once, then not again for the cooldown, counted from that
 * refetch. jose's own rule counts its cooldown from the last fetch of any kind, so a key rotated in
 * within 30 s of the cache being filled was refused until then; and a flood of invented kids must
 * still cost the identity provider one request per cooldown, not one each. Tokens that arrive while
 * a refetch runs wait for it rather than start another.
 */
function createKidRefetch (reload: () => Promise<void>, cache: { uat?: number }, cooldownMs: number): { mayRefetch: (seen: number | undefined) => boolean, refetch: () => Promise<void> } {
  let last: number | undefined
  let running: Promise<void> | undefined
  return {
    // Not when the keys were fetched after this token arrived (their stamp is not the one it saw):
    // they are as fresh as a refetch would get. Compared by stamp, not by clock, so a token that
    // arrives in the same millisecond as the last fetch is still told apart.
    mayRefetch: (seen) => running !== undefined || (cache.uat === seen && (last === undefined || Date.now() - last >= cooldownMs)),
    refetch: async () => {
      if (running === undefined) {
        last = Date.now()
        running = reload().finally(() => { running = undefined })
      }
      await running
    }
  }
}

/**
 * Marks a failure of the key source (network, timeout, non-200, non-JSON, malformed JWKS) so it is
 * told apart from a token that is at fault.
 */
class KeySourceError extends Error {
  constructor (cause: unknown) {
    super('the JSON Web Key Set could not be fetched', { cause })
    this.name = 'KeySourceError'
  }
}

// Fixed texts only: jose's messages are not passed on, and nothing here ever quotes the token.
// They go into a WWW-Authenticate quoted-string, so they carry no double quote or backslash.
const UNAVAILABLE = 'the identity provider\'s signing keys could not be fetched'
const CLAIM_TEXT: Readonly<Record<string, string>> = {
  iss: 'the token was not issued by the expected issuer (iss)',
  aud: 'the token was not issued for this resource (aud)',
  nbf: 'the token is not valid yet (nbf)',
  iat: 'the token has an invalid issue time (iat)'
}

function describeRefusal (err: unknown): JwtOutcome {
  if (err instanceof KeySourceError) return { ok: false, reason: 'unavailable', description: UNAVAILABLE }
  if (err instanceof errors.JWTExpired) return { ok: false, reason: 'expired', description: 'the token has expired' }
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'exp') {
      return { ok: false, reason: 'invalid_token', description: err.reason === 'missing' ? 'the token has no expiry (exp); tokens without one are refused' : 'the token expiry (exp) is not a number' }
    }
    const text = CLAIM_TEXT[err.claim]
    const missing = err.reason === 'missing' && text !== undefined
    return { ok: false, reason: 'invalid_token', description: missing ? `the token has no ${err.claim} claim` : text ?? 'the token claims are not valid' }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return invalid('the token signature is not valid')
  if (err instanceof errors.JWKSNoMatchingKey) return invalid('the token was not signed by a key the identity provider publishes')
  if (err instanceof errors.JOSEAlgNotAllowed || err instanceof errors.JOSENotSupported) return invalid('the token signing algorithm is not accepted')
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid) return invalid('the token is malformed')
  return invalid('the token is not valid')
}

/** Where the verifier reports an outage of its key source; a pino logger fits. */
export interface KeySourceLog {
  warn: (fields: object, message: string) => void
  info: (fields: object, message: string) => void
}

/**
 * One warning when the key source stops answering, one info line when keys are fetched again.
 * jose stamps `uat` on its cache after every fetch that yields a valid JWKS, so a request served
 * from keys cached before the outage (a known kid) does not end it: only a real fetch does.
 */
function createOutageLog (jwksUri: string, cache: { uat?: number }, log: KeySourceLog): { failed: (err: unknown) => void, settled: () => void } {
  // The URL only, and never a token: a password in it (unusual) is redacted like in /admin/config.
  const uri = redactUrl(jwksUri)
  let outage: { since: number, uat: number | undefined, refused: number } | undefined
  return {
    failed (err) {
      if (outage !== undefined) {
        outage.refused++
        return
      }
      outage = { since: Date.now(), uat: cache.uat, refused: 1 }
      log.warn({ jwksUri: uri, err }, 'cannot fetch the identity provider\'s signing keys (JWKS): requests with a JWT get 503 until it answers')
    },
    settled () {
      if (outage === undefined || cache.uat === outage.uat) return
      log.info({ jwksUri: uri, outageMs: Date.now() - outage.since, refused: outage.refused }, 'the identity provider\'s signing keys (JWKS) were fetched again: JWT verification resumed')
      outage = undefined
    }
  }
}

function invalid (description: string): JwtOutcome {
  return { ok: false, reason: 'invalid_token', description }
}

/** A claim by name; a name that is not a claim itself walks into objects at its dots (realm_access.roles). */
export function claimAt (payload: JWTPayload, name: string, path: readonly string[]): unknown {
  if (Object.hasOwn(payload, name)) return payload[name]
  let value: unknown = payload
  for (const segment of path) {
    if (!isRecord(value) || !Object.hasOwn(value, segment)) return undefined
    value = value[segment]
  }
  return value
}

/** Roles from an array (non-strings dropped) or a space-separated string (OAuth's scope style). */
function rolesFrom (value: unknown): readonly string[] {
  if (Array.isArray(value)) return Object.freeze(value.filter((r): r is string => typeof r === 'string' && r !== ''))
  if (typeof value === 'string') return Object.freeze(value.split(/\s+/).filter(r => r !== ''))
  return Object.freeze([])
}

/**
 * Verifies bearer JWTs against the identity provider's published keys: signature, iss, aud, exp
 * (required) and nbf with the configured clock tolerance. Keys are cached for jwksCacheMs; an unknown
 * kid refetches them at once, then at most every JWKS_COOLDOWN_MS (createKidRefetch). Never rejects: every failure is an outcome.
 * An outage of the key source is logged once, when it starts, and again when it ends.
 */
export function createJwtVerifier (config: JwtConfig, log?: KeySourceLog): (token: string) => Promise<JwtOutcome> {
  const cache: { uat?: number } = {}
  const jwks = createRemoteJWKSet(new URL(config.jwksUri), {
    timeoutDuration: config.jwksTimeoutMs,
    cacheMaxAge: config.jwksCacheMs,
    // jose never refetches for an unknown kid while its keys are fresh: createKidRefetch does.
    cooldownDuration: config.jwksCacheMs,
    // Read only (its uat says when keys were last fetched); nothing else writes it.
    [jwksCache]: cache as JWKSCacheInput
  })
  const kids = createKidRefetch(jwks.reload, cache, Math.min(JWKS_COOLDOWN_MS, config.jwksCacheMs))
  const keyFor: JWTVerifyGetKey<CryptoKey> = async (header, token) => {
    const seen = cache.uat
    try {
      return await jwks(header, token)
    } catch (err: unknown) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || !kids.mayRefetch(seen)) throw err
      await kids.refetch()
      return await jwks(header, token)
    }
  }
  const outage = log === undefined ? undefined : createOutageLog(config.jwksUri, cache, log)
  const getKey: JWTVerifyGetKey<CryptoKey> = async (header, token) => {
    try {
      const key = await keyFor(header, token)
      outage?.settled()
      return key
    } catch (err: unknown) {
      // These say the token is at fault (unknown kid, unusable alg, ambiguous key); the rest are the key source.
      if (err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JOSENotSupported || err instanceof errors.JWKSMultipleMatchingKeys) {
        outage?.settled()
        throw err
      }
      outage?.failed(err)
      throw new KeySourceError(err)
    }
  }
  const options: JWTVerifyOptions = {
    issuer: config.issuer,
    audience: config.audience,
    clockTolerance: config.clockToleranceMs / 1000,
    requiredClaims: ['exp'],
    ...(config.algorithms === undefined ? {} : { algorithms: [...config.algorithms] })
  }
  const rolesPath = config.rolesClaim.split('.')
  const subjectPath = config.subjectClaim.split('.')
  const noSubject = `the token has no subject (${config.subjectClaim.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '?')})`

  return async (token) => {
    let result: JWTVerifyResult
    try {
      result = await jwtVerify(token, getKey, options)
    } catch (err: unknown) {
      if (!(err instanceof errors.JWKSMultipleMatchingKeys)) return describeRefusal(err)
      try {
        result = await verifyWithCandidates(token, err, options)
      } catch (inner: unknown) {
        return describeRefusal(inner)
      }
    }
    const { payload } = result
    const id = claimAt(payload, config.subjectClaim, subjectPath)
    if (typeof id !== 'string' || id === '') return invalid(noSubject)
    const principal: Principal = Object.freeze({ id, roles: rolesFrom(claimAt(payload, config.rolesClaim, rolesPath)), via: 'jwt' as const })
    const claims = Object.freeze({ ...payload })
    return typeof payload.exp === 'number' ? { ok: true, principal, expiresAt: payload.exp * 1000, claims } : { ok: true, principal, claims }
  }
}

/**
 * A token without a kid while the JWKS holds several keys for its alg (during a key rotation): jose
 * hands the candidates to the caller, and the one whose signature verifies wins.
 */
async function verifyWithCandidates (token: string, candidates: errors.JWKSMultipleMatchingKeys, options: JWTVerifyOptions): Promise<JWTVerifyResult> {
  for await (const key of candidates) {
    try {
      return await jwtVerify(token, key, options)
    } catch (err: unknown) {
      if (err instanceof errors.JWSSignatureVerificationFailed) continue
      throw err
    }
  }
  throw new errors.JWSSignatureVerificationFailed()
}
