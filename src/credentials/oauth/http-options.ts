import * as oauth from 'oauth4webapi'
import { isLoopbackHost } from '../../net/loopback.ts'

/** How long one request to an authorization server or an upstream's metadata may take. */
export const OAUTH_REQUEST_TIMEOUT_MS = 10_000

/** What every oauth4webapi request of the gateway is made with, for a request to `target`. */
export interface OAuthRequestOptions {
  signal: () => AbortSignal
  [oauth.allowInsecureRequests]?: boolean
  [oauth.customFetch]?: typeof fetch
}

// Authorization servers learned from an upstream's answers, and the guarded fetch their endpoints are reached through.
const discovered = new WeakMap<oauth.AuthorizationServer, typeof fetch>()

/** Every later request to `as` (token, registration, revocation) goes through `guarded` (discovery-guard.ts). */
export function reachThrough (as: oauth.AuthorizationServer, guarded: typeof fetch): void {
  discovered.set(as, guarded)
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

/**
 * Requests to an authorization server's endpoints: insecure only when its token endpoint is on
 * loopback; through the discovery guard when the server was learned from an upstream.
 */
export function serverOptions (as: oauth.AuthorizationServer): OAuthRequestOptions {
  const options = requestOptions(as.token_endpoint ?? as.issuer)
  const guarded = discovered.get(as)
  if (guarded !== undefined) options[oauth.customFetch] = guarded
  return options
}
