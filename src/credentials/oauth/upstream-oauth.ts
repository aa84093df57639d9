import type { UpstreamConfig } from '../../config/schema.ts'
import type { OAuthAuth } from '../../config/upstream-auth-schema.ts'
import { SwitchboardError } from '../../errors.ts'
import type { AuthorizationServerDiscovery } from './authorization-server.ts'
import { redirectUriOf, type ClientRegistry } from './client-registration.ts'
import type { TokenEndpoint } from './token-requests.ts'

/** Everything a per-user OAuth request to one upstream needs: server, client, resource, scopes, redirect URI. */
export interface OAuthContext extends TokenEndpoint {
  readonly resource: string
  readonly scopes: readonly string[]
  readonly redirectUri: string
}

/** The `oauth` auth block of an upstream, or a clear error for any other. */
export function oauthAuthOf (upstream: UpstreamConfig): OAuthAuth & { url: string } {
  const auth = upstream.auth
  if (auth?.type !== 'oauth' || upstream.url === undefined) {
    throw new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `upstream ${upstream.name} has no per-user OAuth (auth type oauth over HTTP)`)
  }
  return { ...auth, url: upstream.url }
}

/**
 * SEP-2207: a client that wants refresh tokens (the gateway refreshes every user's grant) asks for
 * offline_access where the authorization server lists it, and never where it does not. Configured
 * scopes are sent as given.
 */
export function withOfflineAccess (scopes: readonly string[], as: { scopes_supported?: string[] | undefined }): readonly string[] {
  if (scopes.includes(OFFLINE_ACCESS) || as.scopes_supported?.includes(OFFLINE_ACCESS) !== true) return scopes
  return [...scopes, OFFLINE_ACCESS]
}

const OFFLINE_ACCESS = 'offline_access'

export type OAuthContexts = (upstream: UpstreamConfig) => Promise<OAuthContext>

/** Discovery, then the client, for one oauth upstream; both are cached by the modules that make them. */
export function createOAuthContexts (options: { discovery: AuthorizationServerDiscovery, clients: ClientRegistry, publicUrl: string }): OAuthContexts {
  const redirectUri = redirectUriOf(options.publicUrl)
  return async (upstream) => {
    const auth = oauthAuthOf(upstream)
    const found = await options.discovery.forUpstream({ name: upstream.name, url: auth.url, issuer: auth.issuer })
    const client = await options.clients.clientFor(upstream.name, auth, found.as)
    return { as: found.as, client, resource: found.resource, scopes: auth.scopes ?? withOfflineAccess(found.scopes, found.as), redirectUri }
  }
}
