/**
 * The client side of the test authorization server's grants, done with oauth4webapi as any OAuth client would, for
 * tests that need a real token without going through the gateway (fixture checks, direct upstream calls).
 */
import * as oauth from 'oauth4webapi'
import {
  CODE_CLIENT, EXCHANGE_CLIENT, JWT_TOKEN_TYPE, SERVICE_CLIENT, TOKEN_EXCHANGE_GRANT, type AuthorizationServer, type ClientCredentials
} from '../fixtures/authorization-server.ts'
import { consent, type ConsentOptions } from './consent.ts'

/** oauth4webapi refuses http issuers unless told; the test servers are loopback http. */
export const INSECURE = { [oauth.allowInsecureRequests]: true } as const

export async function discover (server: Pick<AuthorizationServer, 'issuer'>): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(server.issuer)
  return await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...INSECURE, algorithm: 'oauth2' }))
}

export interface CodeFlowOptions extends ConsentOptions {
  redirectUri: string
  resource: string
  scope?: string
  client?: ClientCredentials
}

/** Authorization code with PKCE S256 up to the token response; throws (oauth4webapi's error) when the server refuses. */
export async function codeFlow (server: AuthorizationServer, options: CodeFlowOptions): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(server)
  const credentials = options.client ?? CODE_CLIENT
  const client = { client_id: credentials.clientId }
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const authorize = new URL(as.authorization_endpoint ?? `${server.url}/auth`)
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: options.redirectUri,
    scope: options.scope ?? 'mcp:tools',
    resource: options.resource,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256'
  }).toString()
  const callback = await consent(authorize, options)
  const params = oauth.validateAuthResponse(as, client, callback, state)
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.ClientSecretBasic(credentials.clientSecret),
    params, options.redirectUri, verifier, INSECURE)
  return await oauth.processAuthorizationCodeResponse(as, client, response)
}

export async function refresh (server: AuthorizationServer, refreshToken: string, credentials = CODE_CLIENT): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(server)
  const client = { client_id: credentials.clientId }
  const response = await oauth.refreshTokenGrantRequest(as, client, oauth.ClientSecretBasic(credentials.clientSecret), refreshToken, INSECURE)
  return await oauth.processRefreshTokenResponse(as, client, response)
}

export async function revoke (server: AuthorizationServer, token: string, credentials = CODE_CLIENT): Promise<void> {
  const as = await discover(server)
  const client = { client_id: credentials.clientId }
  await oauth.processRevocationResponse(
    await oauth.revocationRequest(as, client, oauth.ClientSecretBasic(credentials.clientSecret), token, INSECURE))
}

export async function clientCredentials (
  server: AuthorizationServer, resource: string, scope = 'mcp:tools', credentials = SERVICE_CLIENT
): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(server)
  const client = { client_id: credentials.clientId }
  const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretPost(credentials.clientSecret),
    { scope, resource }, INSECURE)
  return await oauth.processClientCredentialsResponse(as, client, response)
}

/** RFC 8693: a company JWT (subject token) for an access token whose audience is `audience`. */
export async function exchange (
  server: AuthorizationServer, subjectToken: string, audience: string, scope = 'mcp:tools', credentials = EXCHANGE_CLIENT
): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(server)
  const client = { client_id: credentials.clientId }
  const response = await oauth.genericTokenEndpointRequest(as, client, oauth.ClientSecretBasic(credentials.clientSecret),
    TOKEN_EXCHANGE_GRANT, { subject_token: subjectToken, subject_token_type: JWT_TOKEN_TYPE, audience, scope }, INSECURE)
  return await oauth.processGenericTokenEndpointResponse(as, client, response)
}
