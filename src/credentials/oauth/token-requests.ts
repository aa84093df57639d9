import * as oauth from 'oauth4webapi'
import { Secret } from '../../auth/secret.ts'
import { SwitchboardError } from '../../errors.ts'
import type { Grant } from '../vault/token-vault.ts'
import type { OAuthClient } from './client-registration.ts'
import { serverOptions } from './http-options.ts'

/** An authorization server and the gateway's client there: what every token request needs. */
export interface TokenEndpoint {
  readonly as: oauth.AuthorizationServer
  readonly client: OAuthClient
}

export const TOKEN_TYPE = {
  JWT: 'urn:ietf:params:oauth:token-type:jwt',
  ACCESS_TOKEN: 'urn:ietf:params:oauth:token-type:access_token'
} as const

const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'

/**
 * The authorization server said `invalid_grant`: the grant (a refresh token, a code) is gone for
 * good, and the caller should forget it and ask the user to connect again. Retrying never helps.
 */
export class InvalidGrantError extends SwitchboardError {
  constructor (what: string) {
    super('SB_ERR_UPSTREAM_TOKEN', `${what} refused: invalid_grant (the grant was revoked, expired or already used)`, { details: { oauthError: 'invalid_grant' } })
    this.name = 'InvalidGrantError'
  }
}

/**
 * A failed token request as the gateway's error. Only the OAuth error code and the library's own
 * message travel: a malformed success response is in the library error's cause, tokens and all,
 * so the cause is never attached.
 */
function tokenError (what: string, err: unknown): SwitchboardError {
  if (err instanceof SwitchboardError) return err
  if (err instanceof oauth.ResponseBodyError) {
    if (err.error === 'invalid_grant') return new InvalidGrantError(what)
    return new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `${what} refused: ${err.error} (HTTP ${err.status})`, { details: { oauthError: err.error, status: err.status } })
  }
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    return new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `${what} refused: the client's authentication was not accepted (HTTP ${err.status})`, { details: { status: err.status } })
  }
  const message = err instanceof Error ? err.message : 'unknown failure'
  return new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `${what} failed: ${message}`)
}

/** Wraps a token response at once: nothing past this point holds a token as a plain string. */
export function grantOf (response: oauth.TokenEndpointResponse, type: string, previous?: Grant): Grant {
  const now = Date.now()
  const refreshToken = typeof response.refresh_token === 'string' ? new Secret(response.refresh_token) : previous?.refreshToken
  return {
    accessToken: new Secret(response.access_token),
    refreshToken,
    tokenType: response.token_type === 'bearer' || response.token_type === 'n_a' ? 'Bearer' : response.token_type,
    expiresAt: typeof response.expires_in === 'number' ? now + response.expires_in * 1000 : undefined,
    scope: typeof response.scope === 'string' ? response.scope : previous?.scope,
    obtainedAt: now,
    type
  }
}

// RFC 8693: an issued token that is not an access token has token_type "N_A".
const RECOGNIZED = { n_a: () => {} } satisfies oauth.RecognizedTokenTypes

export interface AuthorizationRequest {
  readonly redirectUri: string
  readonly state: string
  readonly codeVerifier: string
  readonly resource: string
  readonly scopes: readonly string[]
}

/** The authorization endpoint's URL: code flow, PKCE S256, `state`, RFC 8707 `resource`, scopes. */
export async function authorizationUrl (endpoint: TokenEndpoint, request: AuthorizationRequest): Promise<URL> {
  const { as, client } = endpoint
  if (as.authorization_endpoint === undefined) throw new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `the authorization server ${as.issuer} names no authorization endpoint`)
  const url = new URL(as.authorization_endpoint)
  // This URL becomes a browser's Location: never a javascript:, data: or other non-web scheme, whoever named it.
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `the authorization server ${as.issuer} names an authorization endpoint with scheme ${url.protocol}, not https`)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', client.client.client_id)
  url.searchParams.set('redirect_uri', request.redirectUri)
  url.searchParams.set('state', request.state)
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(request.codeVerifier))
  url.searchParams.set('code_challenge_method', 'S256')
  url.searchParams.set('resource', request.resource)
  if (request.scopes.length > 0) url.searchParams.set('scope', request.scopes.join(' '))
  return url
}

/** Exchanges the callback's code (its `state` already checked by the caller) with the stored verifier. */
export async function exchangeCode (endpoint: TokenEndpoint, callback: URLSearchParams, expectedState: string, redirectUri: string, codeVerifier: string, resource: string): Promise<Grant> {
  const { as, client } = endpoint
  try {
    const params = oauth.validateAuthResponse(as, client.client, callback, expectedState)
    const response = await oauth.authorizationCodeGrantRequest(as, client.client, client.auth, params, redirectUri, codeVerifier, {
      ...serverOptions(as), additionalParameters: { resource }
    })
    return grantOf(await oauth.processAuthorizationCodeResponse(as, client.client, response), 'oauth')
  } catch (err: unknown) {
    if (err instanceof oauth.AuthorizationResponseError) {
      throw new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `the authorization server answered the consent with ${err.error}`, { details: { oauthError: err.error } })
    }
    throw tokenError('the code exchange', err)
  }
}

/** Spends `grant`'s refresh token; a rotated refresh token replaces it, else the old one is kept. */
export async function refreshGrant (endpoint: TokenEndpoint, grant: Grant, resource: string): Promise<Grant> {
  const { as, client } = endpoint
  if (grant.refreshToken === undefined) throw new InvalidGrantError('the refresh (there is no refresh token)')
  try {
    const response = await oauth.refreshTokenGrantRequest(as, client.client, client.auth, grant.refreshToken.reveal(), {
      ...serverOptions(as), additionalParameters: { resource }
    })
    return grantOf(await oauth.processRefreshTokenResponse(as, client.client, response), grant.type, grant)
  } catch (err: unknown) {
    throw tokenError('the refresh', err)
  }
}

/** RFC 7009. False when the server offers no revocation endpoint (the grant then lapses on its own). */
export async function revokeToken (endpoint: TokenEndpoint, token: Secret, hint: 'refresh_token' | 'access_token'): Promise<boolean> {
  const { as, client } = endpoint
  if (as.revocation_endpoint === undefined) return false
  try {
    const response = await oauth.revocationRequest(as, client.client, client.auth, token.reveal(), {
      ...serverOptions(as), additionalParameters: { token_type_hint: hint }
    })
    await oauth.processRevocationResponse(response)
    return true
  } catch (err: unknown) {
    throw tokenError('the revocation', err)
  }
}

/** A service account's token (client credentials grant). */
export async function clientCredentials (endpoint: TokenEndpoint, request: { scope?: string | undefined, resource?: string | undefined }): Promise<Grant> {
  const { as, client } = endpoint
  const params = new URLSearchParams()
  if (request.scope !== undefined) params.set('scope', request.scope)
  if (request.resource !== undefined) params.set('resource', request.resource)
  try {
    const response = await oauth.clientCredentialsGrantRequest(as, client.client, client.auth, params, serverOptions(as))
    return grantOf(await oauth.processClientCredentialsResponse(as, client.client, response), 'client_credentials')
  } catch (err: unknown) {
    throw tokenError('the client credentials grant', err)
  }
}

export interface TokenExchangeRequest {
  readonly subjectToken: Secret
  readonly subjectTokenType: string
  readonly audience?: string | undefined
  readonly resource?: string | undefined
  readonly scope?: string | undefined
  readonly requestedTokenType?: string | undefined
}

/** RFC 8693: the caller's token traded for one meant for the upstream. */
export async function exchangeToken (endpoint: TokenEndpoint, request: TokenExchangeRequest): Promise<Grant> {
  const { as, client } = endpoint
  const params = new URLSearchParams({ subject_token: request.subjectToken.reveal(), subject_token_type: request.subjectTokenType })
  if (request.audience !== undefined) params.set('audience', request.audience)
  if (request.resource !== undefined) params.set('resource', request.resource)
  if (request.scope !== undefined) params.set('scope', request.scope)
  if (request.requestedTokenType !== undefined) params.set('requested_token_type', request.requestedTokenType)
  try {
    const response = await oauth.genericTokenEndpointRequest(as, client.client, client.auth, TOKEN_EXCHANGE_GRANT, params, serverOptions(as))
    return grantOf(await oauth.processGenericTokenEndpointResponse(as, client.client, response, { recognizedTokenTypes: RECOGNIZED }), 'token_exchange')
  } catch (err: unknown) {
    throw tokenError('the token exchange', err)
  }
}
