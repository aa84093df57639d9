import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { SignJWT, errors as joseErrors, jwtVerify } from 'jose'
import type { Principal } from '../../auth/principal.ts'

/** A connect state lives this long; a link lives http.connect.linkTtlMs (10 minutes by default). */
export const CONNECT_TTL_MS = 10 * 60_000

const LINK_AUDIENCE = 'switchboard:connect-link'

/** What a connect link names: who it was handed to, for which upstream, answering which elicitation. */
export interface LinkClaims {
  readonly upstream: string
  readonly principal: Principal
  readonly elicitationId: string
}

/** A link as read: valid (with its claims and when it expires), expired, or not one this gateway signed for that upstream. */
export type LinkReading =
  | { readonly status: 'valid', readonly claims: LinkClaims, readonly expiresAt: number }
  | { readonly status: 'expired' }
  | { readonly status: 'invalid' }

/** Keys derived (HKDF) from one root, by purpose: every replica with the same root derives the same ones. */
export type KeyDeriver = (purpose: string) => Buffer

/**
 * The root of the connect flow's keys: the vault's key, so every replica shares them and none is
 * the encryption key itself. Without a configured key one is made at start: links, states and
 * browser proofs then work only on this replica, as the vault does.
 */
export function createKeyDeriver (encryptionKey: string | undefined): KeyDeriver {
  const root = encryptionKey === undefined ? randomBytes(32) : Buffer.from(encryptionKey, 'base64')
  return (purpose) => Buffer.from(hkdfSync('sha256', root, 'switchboard', purpose, 32))
}

export interface ConnectSigner {
  /** `<id>.<HMAC>`: the OAuth `state` of a stored connect record. */
  signState: (id: string) => string
  /** The record id of a state this gateway signed; undefined for a forged one, before any store is read. */
  stateId: (state: string) => string | undefined
  signLink: (claims: LinkClaims) => Promise<string>
  readLink: (token: string) => Promise<LinkReading>
}

/** Signs states and links with keys from `derive`; a link lives `linkTtlMs`. */
export function createConnectSigner (derive: KeyDeriver, linkTtlMs = CONNECT_TTL_MS): ConnectSigner {
  const stateKey = derive('connect-state')
  const linkKey = new Uint8Array(derive('connect-link'))

  const mac = (id: string): Buffer => createHmac('sha256', stateKey).update(id).digest()

  return {
    signState: (id) => `${id}.${mac(id).toString('base64url')}`,
    stateId: (state) => {
      const dot = state.lastIndexOf('.')
      if (dot <= 0) return undefined
      const id = state.slice(0, dot)
      const given = Buffer.from(state.slice(dot + 1), 'base64url')
      const expected = mac(id)
      return given.length === expected.length && timingSafeEqual(given, expected) ? id : undefined
    },
    signLink: async ({ upstream, principal, elicitationId }) => await new SignJWT({
      up: upstream, eid: elicitationId, p: { id: principal.id, via: principal.via, roles: [...principal.roles] }
    })
      .setProtectedHeader({ alg: 'HS256' })
      .setAudience(LINK_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(new Date(Date.now() + linkTtlMs))
      .sign(linkKey),
    readLink: async (token) => {
      const invalid = { status: 'invalid' } as const
      try {
        // No clock tolerance: a link is good for exactly its lifetime.
        const { payload } = await jwtVerify(token, linkKey, { algorithms: ['HS256'], audience: LINK_AUDIENCE })
        const p = payload.p
        if (typeof payload.up !== 'string' || typeof payload.eid !== 'string' || typeof payload.exp !== 'number' || typeof p !== 'object' || p === null) return invalid
        const { id, via, roles } = p as Record<string, unknown>
        if (typeof id !== 'string' || (via !== 'api-key' && via !== 'jwt' && via !== 'none') || !Array.isArray(roles) || !roles.every(r => typeof r === 'string')) return invalid
        const claims = { upstream: payload.up, elicitationId: payload.eid, principal: Object.freeze({ id, via, roles: Object.freeze([...roles]) }) }
        return { status: 'valid', claims, expiresAt: payload.exp * 1000 }
      } catch (err: unknown) {
        // Only a genuine link's expiry is "expired": jose checks the signature before the claims.
        return err instanceof joseErrors.JWTExpired ? { status: 'expired' } : invalid
      }
    }
  }
}
