import * as oauth from 'oauth4webapi'
import { isLoopbackHost } from '../../net/loopback.ts'

/** How long one request to an authorization server or an upstream's metadata may take. */
export const OAUTH_REQUEST_TIMEOUT_MS = 10_000

/** What every oauth4webapi request of the gateway is made with, for a request to `target`. */
export interface OAuthRequestOptions {
  signal: () => AbortSignal
  [oauth.allowInsecureRequests]?: boolean
}

/**
 * oauth4webapi refuses http:// (OAuth 2.1 wants TLS). The gateway allows it for a loopback host
 * only: nothing off this machine can read or forge that traffic, and tests and local authorization
 * servers run there. Every other target must be https.
 */
export function requestOptions (target: string | URL): OAuthRequestOptions {
  const url = typeof target === 'string' ? new URL(target) : target
  const options: OAuthRequestOptions = { signal: () => AbortSignal.timeout(OAUTH_REQUEST_TIMEOUT_MS) }
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) options[oauth.allowInsecureRequests] = true
  return options
}

/** Requests to an authorization server's endpoints: insecure only when its token endpoint is on loopback. */
export function serverOptions (as: oauth.AuthorizationServer): OAuthRequestOptions {
  return requestOptions(as.token_endpoint ?? as.issuer)
}
