import { EncryptJWT, jwtDecrypt, type JWTPayload } from 'jose'

/**
 * Small values a browser carries for the gateway (its proof, a sign-in in progress), encrypted and
 * authenticated (JWE, dir + A256GCM) with a key only the gateway's replicas hold: the browser can
 * neither read nor forge them, and any replica opens them (no store). `purpose` is the token's
 * audience, so one kind is never taken for another.
 */
export interface SealedTokens {
  seal: (claims: JWTPayload, ttlMs: number) => Promise<string>
  /** The claims of a token this gateway sealed for this purpose and that has not expired; undefined otherwise. */
  open: (token: string | undefined) => Promise<JWTPayload | undefined>
}

const MAX_TOKEN_CHARS = 4096

export function createSealedTokens (key: Uint8Array, purpose: string): SealedTokens {
  const audience = `switchboard:${purpose}`
  return {
    seal: async (claims, ttlMs) => await new EncryptJWT(claims)
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime(new Date(Date.now() + ttlMs))
      .encrypt(key),
    open: async (token) => {
      if (token === undefined || token === '' || token.length > MAX_TOKEN_CHARS) return undefined
      try {
        const { payload } = await jwtDecrypt(token, key, { audience, keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] })
        return payload
      } catch {
        return undefined
      }
    }
  }
}
