import type { AuthConfig } from '../config/access-schema.ts'

// OAuth 2.0 Protected Resource Metadata (RFC 9728): how an MCP client finds the authorization server.

export const WELL_KNOWN_PROTECTED_RESOURCE = '/.well-known/oauth-protected-resource'

/** The canonical resource URI: `resource`, else the audience tokens must carry. Undefined without jwt. */
export function resourceOf (auth: AuthConfig): string | undefined {
  return auth.jwt === undefined ? undefined : auth.resource ?? auth.jwt.audience
}

function parseHttpUrl (value: string): URL | undefined {
  try {
    const url = new URL(value)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : undefined
  } catch {
    return undefined
  }
}

/** The resource's path without a terminating slash ("" for none, as the MCP SDK builds it): what follows the well-known prefix. */
function suffixOf (url: URL): string {
  return url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname
}

/** The metadata document, or undefined when no OAuth (jwt) is configured. */
export function protectedResourceMetadata (auth: AuthConfig): Record<string, unknown> | undefined {
  const resource = resourceOf(auth)
  if (resource === undefined || auth.jwt === undefined) return undefined
  const doc: Record<string, unknown> = {
    resource,
    authorization_servers: auth.authorizationServers ?? [auth.jwt.issuer],
    bearer_methods_supported: ['header']
  }
  if (auth.scopes.length > 0) doc.scopes_supported = [...auth.scopes]
  doc.resource_name = 'Switchboard MCP gateway'
  return doc
}

/**
 * Absolute URL of the metadata (RFC 9728 §3.1): the well-known prefix goes between the host and the
 * resource's path, e.g. https://gw.example.com/mcp → https://gw.example.com/.well-known/oauth-protected-resource/mcp;
 * a resource without a path gets the root form. Undefined without jwt, or when the resource is not an
 * http(s) URL (an audience such as "api://switchboard"), as no such URL can be derived.
 */
export function metadataUrl (auth: AuthConfig): string | undefined {
  const resource = resourceOf(auth)
  const url = resource === undefined ? undefined : parseHttpUrl(resource)
  if (url === undefined) return undefined
  return `${url.origin}${WELL_KNOWN_PROTECTED_RESOURCE}${suffixOf(url)}${url.search}`
}

/**
 * The local paths that serve the metadata: the root form always (clients fall back to it), and the
 * path-suffixed form when the resource has a path. Empty without jwt.
 */
export function metadataPaths (auth: AuthConfig): string[] {
  const resource = resourceOf(auth)
  if (resource === undefined) return []
  const url = parseHttpUrl(resource)
  const suffix = url === undefined ? '' : suffixOf(url)
  return suffix === '' ? [WELL_KNOWN_PROTECTED_RESOURCE] : [WELL_KNOWN_PROTECTED_RESOURCE, WELL_KNOWN_PROTECTED_RESOURCE + suffix]
}
