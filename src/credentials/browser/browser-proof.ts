import { createApiKeyVerifier } from '../../auth/api-keys.ts'
import type { Principal } from '../../auth/principal.ts'
import type { AuthConfig } from '../../config/access-schema.ts'
import type { KeyDeriver } from '../oauth/connect-signing.ts'
import { type BrowserSessions, createBrowserSessions } from './browser-sessions.ts'
import { type BrowserSignIn, createOidcSignIn } from './oidc-sign-in.ts'

/**
 * How the connect routes learn who is at a browser, by the means that fit how the principal signs in
 * to the gateway: JWT principals sign in at the same identity provider (OpenID Connect), API-key
 * principals type their key once. Domain code: the routes in http/ turn it into pages and cookies.
 */
export interface BrowserProof {
  sessions: BrowserSessions
  signIn: BrowserSignIn
  /** The API-key principal a typed key proves (constant time, as the auth hook compares), or undefined. */
  keyProof: (key: string) => Principal | undefined
  /** http.connect.apiKeys in force: `form` lets API-key principals prove themselves, `refuse` does not. */
  apiKeys: () => 'form' | 'refuse'
  /** Whether the gateway authenticates its callers at all (without auth every caller is the one anonymous principal). */
  authEnabled: () => boolean
  /** Whether any API key is configured (the key form is offered only then). */
  hasApiKeys: () => boolean
}

export interface BrowserProofOptions {
  keys: KeyDeriver
  /** The auth config in force (a reload may change keys and the identity provider). */
  auth: () => AuthConfig | undefined
  connect: () => { sessionTtlMs: number, apiKeys: 'form' | 'refuse' }
  /** `<publicUrl>/connect/signin/callback` */
  redirectUri: string
}

export function createBrowserProof (options: BrowserProofOptions): BrowserProof {
  let verifierFor: { keys: AuthConfig['apiKeys'], verify: (key: string) => Principal | undefined } | undefined
  const keyProof = (key: string): Principal | undefined => {
    const keys = options.auth()?.apiKeys ?? []
    if (verifierFor?.keys !== keys) verifierFor = { keys, verify: createApiKeyVerifier(keys) }
    return verifierFor.verify(key)
  }
  return {
    sessions: createBrowserSessions(options.keys, options.connect().sessionTtlMs),
    signIn: createOidcSignIn({ auth: options.auth, keys: options.keys, redirectUri: options.redirectUri }),
    keyProof,
    apiKeys: () => options.connect().apiKeys,
    authEnabled: () => options.auth() !== undefined,
    hasApiKeys: () => (options.auth()?.apiKeys.length ?? 0) > 0
  }
}
