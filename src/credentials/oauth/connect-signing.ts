import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { SignJWT, jwtVerify } from 'jose'
import type { Principal } from '../../auth/principal.ts'

/** A connect state or link lives this long (the "at most 10 minutes"). */
export const CONNECT_TTL_MS = 10 * 60_000

const LINK_AUDIENCE = 'switchboard:connect-link'

/** What a connect link names: who it was handed to, for which upstream, answering which elicitation. */
export interface LinkClaims {
  readonly upstream: string
  readonly principal: Principal
  readonly elicitationId: string
}

export interface ConnectSigner {
  /** `<id>.<HMAC>`: the OAuth `state` of a stored connect record. */
  signState: (id: string) => string
  /** The record id of a state this gateway signed; undefined for a forged one, before any store is read. */
  stateId: (state: string) => string | undefined
  signLink: (claims: LinkClaims) => Promise<string>
  verifyLink: (token: string) => Promise<LinkClaims | undefined>
}

/**
 * Keys for states and links, derived (HKDF) from the vault's key so every replica shares them and
 * neither is the encryption key itself. Without a configured key one is made at start: links and
 * states then work only on this replica, as the vault does.
 */
export function createConnectSigner (encryptionKey: string | undefined): ConnectSigner {
  const root = encryptionKey === undefined ? randomBytes(32) : Buffer.from(encryptionKey, 'base64')
  const derive = (info: string): Buffer => Buffer.from(hkdfSync('sha256', root, 'switchboard', info, 32))
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
      .setExpirationTime(new Date(Date.now() + CONNECT_TTL_MS))
      .sign(linkKey),
    verifyLink: async (token) => {
      try {
        const { payload } = await jwtVerify(token, linkKey, { algorithms: ['HS256'], audience: LINK_AUDIENCE })
        const p = payload.p
        if (typeof payload.up !== 'string' || typeof payload.eid !== 'string' || typeof p !== 'object' || p === null) return undefined
        const { id, via, roles } = p as Record<string, unknown>
        if (typeof id !== 'string' || (via !== 'api-key' && via !== 'jwt' && via !== 'none') || !Array.isArray(roles) || !roles.every(r => typeof r === 'string')) return undefined
        return { upstream: payload.up, elicitationId: payload.eid, principal: Object.freeze({ id, via, roles: Object.freeze([...roles]) }) }
      } catch {
        return undefined
      }
    }
  }
}
