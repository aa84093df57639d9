import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Principal } from '../../auth/principal.ts'
import type { KeyDeriver } from '../oauth/connect-signing.ts'
import { createSealedTokens } from './sealed-token.ts'

/** A browser that proved which principal is at it (an IdP sign-in, an API key typed in): the connect routes' cookie. */
export interface ProvenBrowser {
  /** Random, per proof: a connect started by this browser can only be completed by it. */
  readonly id: string
  readonly principal: Principal
  readonly expiresAt: number
}

export interface BrowserSessions {
  /** The proof of `principal` at this browser, as the cookie value that carries it for `ttlMs`. */
  issue: (principal: Principal) => Promise<{ cookie: string, proven: ProvenBrowser }>
  /** The browser a cookie value proves, when it is genuine and live. */
  open: (cookie: string | undefined) => Promise<ProvenBrowser | undefined>
  /** A form's anti-forgery token, bound to `binding` (a random value in a cookie of the browser's own). */
  csrfToken: (binding: string) => string
  csrfMatches: (binding: string | undefined, presented: unknown) => boolean
  readonly ttlMs: number
}

/** A fresh random value for the CSRF binding cookie. */
export function newBinding (): string {
  return randomBytes(24).toString('base64url')
}

function principalOf (value: unknown): Principal | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { id, via } = value as Record<string, unknown>
  if (typeof id !== 'string' || (via !== 'api-key' && via !== 'jwt' && via !== 'none')) return undefined
  // Roles are not proven at the browser and not needed there: the principal's key is its id and how it signs in.
  return Object.freeze({ id, via, roles: Object.freeze([]) as readonly string[] })
}

export function createBrowserSessions (keys: KeyDeriver, ttlMs: number): BrowserSessions {
  const tokens = createSealedTokens(new Uint8Array(keys('connect-browser')), 'connect-browser')
  const csrfKey = keys('connect-csrf')
  const csrfToken = (binding: string): string => createHmac('sha256', csrfKey).update(binding).digest('base64url')
  return {
    ttlMs,
    issue: async (principal) => {
      const id = randomBytes(18).toString('base64url')
      const cookie = await tokens.seal({ sid: id, p: { id: principal.id, via: principal.via } }, ttlMs)
      return { cookie, proven: { id, principal: principalOf(principal) ?? principal, expiresAt: Date.now() + ttlMs } }
    },
    open: async (cookie) => {
      const claims = await tokens.open(cookie)
      if (claims === undefined || typeof claims.sid !== 'string' || typeof claims.exp !== 'number') return undefined
      const principal = principalOf(claims.p)
      return principal === undefined ? undefined : { id: claims.sid, principal, expiresAt: claims.exp * 1000 }
    },
    csrfToken,
    csrfMatches: (binding, presented) => {
      if (binding === undefined || typeof presented !== 'string') return false
      const expected = Buffer.from(csrfToken(binding))
      const given = Buffer.from(presented)
      return given.length === expected.length && timingSafeEqual(given, expected)
    }
  }
}
