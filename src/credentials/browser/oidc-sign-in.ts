import { randomBytes } from 'node:crypto'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { claimAt } from '../../auth/jwt-verifier.ts'
import type { Principal } from '../../auth/principal.ts'
import type { AuthConfig } from '../../config/access-schema.ts'
import { SwitchboardError } from '../../errors.ts'
import { requestOptions } from '../oauth/http-options.ts'
import type { KeyDeriver } from '../oauth/connect-signing.ts'
import { createSealedTokens } from './sealed-token.ts'

/** How long a browser may take at the identity provider's sign-in. */
export const SIGN_IN_TTL_MS = 10 * 60_000
/** The identity provider's metadata and keys are fetched again after this long. */
const DISCOVERY_CACHE_MS = 60 * 60_000

/** Where a browser goes back to once it signed in: the connect page it came from. */
export interface SignInReturn {
  readonly upstream: string
  readonly link?: string | undefined
}

export interface BrowserSignIn {
  /** Whether JWT principals can sign in at the browser (auth.jwt.browser is configured). */
  available: () => boolean
  /** The identity provider's authorization URL, and the sealed value the browser keeps (a cookie) until it comes back. */
  start: (back: SignInReturn) => Promise<{ url: URL, pending: string }>
  /**
   * The callback: checks that this browser started the sign-in (`pending`), redeems the code, checks
   * the ID token (signature, issuer, audience, nonce) and answers whom it names. Rejects with
   * SB_ERR_CONNECT_STATE (not started here, expired) or SB_ERR_CONNECT_DENIED (refused, not accepted).
   */
  finish: (query: URLSearchParams, pending: string | undefined) => Promise<{ principal: Principal, back: SignInReturn }>
}

export interface OidcSignInOptions {
  /** The auth config in force (a reload may change it). */
  auth: () => AuthConfig | undefined
  keys: KeyDeriver
  /** `<publicUrl>/connect/signin/callback`, registered at the identity provider. */
  redirectUri: string
}

interface Discovered { as: oauth.AuthorizationServer, jwks: ReturnType<typeof createRemoteJWKSet>, at: number, issuer: string }

function denied (why: string): SwitchboardError {
  return new SwitchboardError('SB_ERR_CONNECT_DENIED', `the sign-in at the identity provider did not succeed: ${why}`)
}

/**
 * The gateway as an OpenID Connect relying party of `auth.jwt.issuer` (authorization code, PKCE
 * S256, nonce), only to learn who is at a browser: the ID token's issuer and subject must be those
 * of the principal a connect is for. Nothing of the sign-in is stored: the browser carries it, sealed.
 */
export function createOidcSignIn (options: OidcSignInOptions): BrowserSignIn {
  const pendingTokens = createSealedTokens(new Uint8Array(options.keys('connect-signin')), 'connect-signin')
  let discovered: Discovered | undefined

  const config = (): { jwt: NonNullable<AuthConfig['jwt']>, browser: NonNullable<NonNullable<AuthConfig['jwt']>['browser']> } => {
    const jwt = options.auth()?.jwt
    if (jwt?.browser === undefined) throw new SwitchboardError('SB_ERR_CONNECT_DENIED', 'this gateway has no browser sign-in for JWT principals (auth.jwt.browser)')
    return { jwt, browser: jwt.browser }
  }

  const discover = async (issuer: string, jwksUri: string): Promise<Discovered> => {
    if (discovered !== undefined && discovered.issuer === issuer && Date.now() - discovered.at < DISCOVERY_CACHE_MS) return discovered
    const url = new URL(issuer)
    const as = await oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { ...requestOptions(url), algorithm: 'oidc' }))
    discovered = { as, jwks: createRemoteJWKSet(new URL(jwksUri)), at: Date.now(), issuer }
    return discovered
  }

  const clientAuth = (secret: string | undefined): oauth.ClientAuth => secret === undefined ? oauth.None() : oauth.ClientSecretBasic(secret)

  return {
    available: () => options.auth()?.jwt?.browser !== undefined,

    start: async (back) => {
      const { jwt, browser } = config()
      const { as } = await discover(jwt.issuer, jwt.jwksUri)
      if (as.authorization_endpoint === undefined) throw denied('the identity provider names no authorization endpoint')
      const verifier = oauth.generateRandomCodeVerifier()
      const state = randomBytes(24).toString('base64url')
      const nonce = randomBytes(24).toString('base64url')
      const url = new URL(as.authorization_endpoint)
      const scopes = new Set(['openid', ...browser.scopes])
      url.search = new URLSearchParams({
        response_type: 'code',
        client_id: browser.clientId,
        redirect_uri: options.redirectUri,
        scope: [...scopes].join(' '),
        state,
        nonce,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256'
      }).toString()
      const pending = await pendingTokens.seal({ st: state, v: verifier, n: nonce, up: back.upstream, ...(back.link === undefined ? {} : { l: back.link }) }, SIGN_IN_TTL_MS)
      return { url, pending }
    },

    finish: async (query, pending) => {
      const claims = await pendingTokens.open(pending)
      if (claims === undefined || typeof claims.st !== 'string' || typeof claims.v !== 'string' || typeof claims.n !== 'string' || typeof claims.up !== 'string') {
        throw new SwitchboardError('SB_ERR_CONNECT_STATE', 'the sign-in callback came to a browser that did not start a sign-in, or it expired')
      }
      if (query.get('state') !== claims.st) throw new SwitchboardError('SB_ERR_CONNECT_STATE', 'the sign-in callback does not belong to the sign-in this browser started')
      if (query.has('error')) throw denied('the identity provider answered an error')
      const { jwt, browser } = config()
      const { as, jwks } = await discover(jwt.issuer, jwt.jwksUri)
      const client: oauth.Client = { client_id: browser.clientId }
      let idToken: string
      let subject: unknown
      try {
        const params = oauth.validateAuthResponse(as, client, query, claims.st)
        const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth(browser.clientSecret), params, options.redirectUri, claims.v, requestOptions(as.token_endpoint ?? jwt.issuer))
        const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: claims.n, requireIdToken: true })
        if (result.id_token === undefined) throw denied('no ID token')
        idToken = result.id_token
        // oauth4webapi checked iss, aud, exp and nonce; the signature is checked too, with the keys jwt.jwksUri names.
        const { payload } = await jwtVerify(idToken, jwks, { issuer: jwt.issuer, audience: browser.clientId, clockTolerance: Math.round(jwt.clockToleranceMs / 1000) })
        subject = claimAt(payload, jwt.subjectClaim, jwt.subjectClaim.split('.'))
      } catch (err: unknown) {
        if (err instanceof SwitchboardError) throw err
        // Only the library's message: a token response is never attached.
        throw denied(err instanceof Error ? err.message : 'the identity provider\'s answer was not accepted')
      }
      if (typeof subject !== 'string' || subject === '') throw denied(`the ID token has no ${jwt.subjectClaim} (add the scope that releases it to auth.jwt.browser.scopes)`)
      const principal: Principal = Object.freeze({ id: subject, via: 'jwt' as const, roles: Object.freeze([]) as readonly string[] })
      return { principal, back: { upstream: claims.up, link: typeof claims.l === 'string' ? claims.l : undefined } }
    }
  }
}
