import * as oauth from 'oauth4webapi'
import { SwitchboardError } from '../../errors.ts'
import { createDiscoveryGuard, discoveryRefused, type DiscoveryGuard, type DiscoveryScope } from './discovery-guard.ts'
import { OAUTH_REQUEST_TIMEOUT_MS, reachThrough, requestOptions } from './http-options.ts'

/** What a per-user OAuth flow to one upstream needs to know of its authorization server. */
export interface UpstreamAuthorization {
  readonly as: oauth.AuthorizationServer
  /** RFC 8707 `resource`, sent on every authorization and token request. */
  readonly resource: string
  /** Scopes to ask for when config names none: the 401 challenge's, else the metadata's `scopes_supported`. */
  readonly scopes: readonly string[]
}

export interface AuthorizationServerDiscovery {
  /** Discovered once per upstream (name, url, issuer) and kept for an hour; a failure is not kept. */
  forUpstream: (upstream: { name: string, url: string, issuer?: string | undefined }) => Promise<UpstreamAuthorization>
  /** RFC 8414 metadata of `issuer`, else its OpenID Connect discovery document. */
  forIssuer: (issuer: string) => Promise<oauth.AuthorizationServer>
}

export interface DiscoveryOptions {
  maxEntries?: number
  ttlMs?: number
  /** What URLs learned from an upstream's answers may lead to (default: the rule with the system resolver). */
  guard?: DiscoveryGuard
  /** How the upstream's own URL and origin are asked (default: the scope's, at the address judged); tests point it elsewhere. */
  upstreamFetch?: typeof fetch
}

/**
 * The metadata endpoints the gateway may reach or send a browser to: each one an upstream's answer
 * names passes the discovery guard, or the whole authorization server is refused.
 */
const ENDPOINTS = [
  'authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint',
  'introspection_endpoint', 'jwks_uri', 'userinfo_endpoint', 'pushed_authorization_request_endpoint',
  'device_authorization_endpoint'
] as const

const DEFAULT_MAX_ENTRIES = 256
const DEFAULT_TTL_MS = 60 * 60_000

/** The upstream URL as RFC 8707 and the MCP spec want it: lowercase scheme and host, no fragment. */
export function canonicalResource (url: string): string {
  const parsed = new URL(url)
  parsed.hash = ''
  return parsed.href
}

interface Entry<T> { value: Promise<T>, at: number }

/** A bounded map of promises: oldest out first, failures dropped so the next caller tries again. */
function boundedCache<T> (maxEntries: number, ttlMs: number): (key: string, make: () => Promise<T>) => Promise<T> {
  const entries = new Map<string, Entry<T>>()
  return (key, make) => {
    const hit = entries.get(key)
    if (hit !== undefined && Date.now() - hit.at < ttlMs) return hit.value
    entries.delete(key)
    const value = make()
    entries.set(key, { value, at: Date.now() })
    value.catch(() => { if (entries.get(key)?.value === value) entries.delete(key) })
    while (entries.size > maxEntries) {
      const oldest = entries.keys().next().value
      if (oldest === undefined) break
      entries.delete(oldest)
    }
    return value
  }
}

/**
 * The challenges of a 401. oauth4webapi parses WWW-Authenticate only inside its response
 * processors, so a copy of the headers is handed to one that throws them as a challenge error.
 */
async function challengesOf (response: Response): Promise<oauth.WWWAuthenticateChallenge[]> {
  const header = response.headers.get('www-authenticate')
  if (header === null) return []
  try {
    await oauth.processRevocationResponse(new Response(null, { status: 401, headers: { 'www-authenticate': header } }))
  } catch (err: unknown) {
    if (err instanceof oauth.WWWAuthenticateChallengeError) return err.cause
  }
  return []
}

/** Whether metadata naming `resource` may speak for `url`: the same origin, and `url` at or under its path. */
function covers (resource: string, url: string): boolean {
  const r = new URL(resource)
  const u = new URL(url)
  if (r.origin !== u.origin) return false
  const base = r.pathname.endsWith('/') ? r.pathname : `${r.pathname}/`
  return u.pathname === r.pathname || u.pathname.startsWith(base)
}

function discoveryFailed (what: string, cause?: unknown): SwitchboardError {
  return new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `OAuth discovery failed: ${what}`, { cause })
}

/** Reads RFC 9728 metadata from `response`, checked to speak for `upstreamUrl`; undefined when it is not there. */
async function protectedResourceOf (response: Response, upstreamUrl: string): Promise<oauth.ResourceServer | undefined> {
  if (response.status !== 200) {
    await response.body?.cancel()
    return undefined
  }
  const peek: unknown = await response.clone().json().catch(() => undefined)
  const resource = typeof peek === 'object' && peek !== null && 'resource' in peek ? peek.resource : undefined
  if (typeof resource !== 'string' || !URL.canParse(resource) || !covers(resource, upstreamUrl)) {
    throw discoveryFailed(`the protected-resource metadata does not name ${upstreamUrl} as its resource`)
  }
  return await oauth.processResourceDiscoveryResponse(new URL(resource), response)
}

/**
 * The challenge's metadata URL, fetched only on the upstream's own origin (RFC 9728 metadata speaks
 * for its resource; anywhere else the upstream would aim the gateway at a host of its choosing).
 */
async function fetchMetadata (upstream: string, url: string, upstreamUrl: string, upstreamFetch: typeof fetch): Promise<Response> {
  const target = URL.canParse(url) ? new URL(url) : undefined
  if (target === undefined || target.origin !== new URL(upstreamUrl).origin) {
    throw discoveryRefused(upstream, 'the protected-resource metadata its 401 names', target?.host ?? '', 'it is not on the upstream\'s own origin')
  }
  // As http-options.ts: plain http only to a loopback host.
  if (requestOptions(target)[oauth.allowInsecureRequests] !== true && target.protocol !== 'https:') {
    throw discoveryFailed(`the protected-resource metadata URL ${target.origin} is not https`)
  }
  return await upstreamFetch(target, { headers: { accept: 'application/json' }, redirect: 'manual', signal: AbortSignal.timeout(OAUTH_REQUEST_TIMEOUT_MS) })
}

/**
 * The MCP client's first step: an unauthenticated request. A ping is sent, not an initialize, so
 * an upstream that turns out to need no token opens no session for it.
 */
async function probe (upstreamUrl: string, upstreamFetch: typeof fetch): Promise<{ metadataUrl?: string, scope?: string }> {
  const response = await upstreamFetch(upstreamUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
    redirect: 'manual',
    signal: AbortSignal.timeout(OAUTH_REQUEST_TIMEOUT_MS)
  })
  await response.body?.cancel()
  if (response.status !== 401) return {}
  const bearer = (await challengesOf(response)).find(c => c.scheme === 'bearer')
  const out: { metadataUrl?: string, scope?: string } = {}
  if (bearer?.parameters.resource_metadata !== undefined) out.metadataUrl = bearer.parameters.resource_metadata
  if (bearer?.parameters.scope !== undefined) out.scope = bearer.parameters.scope
  return out
}

/** RFC 9728 metadata: from the challenge's URL, else the path-inserted well-known URL, else the origin's. */
async function discoverResource (upstream: string, upstreamUrl: string, upstreamFetch: typeof fetch): Promise<{ metadata?: oauth.ResourceServer, scope?: string }> {
  const challenge = await probe(upstreamUrl, upstreamFetch)
  const scope = challenge.scope === undefined ? {} : { scope: challenge.scope }
  if (challenge.metadataUrl !== undefined) {
    const metadata = await protectedResourceOf(await fetchMetadata(upstream, challenge.metadataUrl, upstreamUrl, upstreamFetch), upstreamUrl)
    if (metadata !== undefined) return { metadata, ...scope }
  }
  const url = new URL(upstreamUrl)
  const candidates = url.pathname === '/' ? [url] : [url, new URL(url.origin)]
  for (const candidate of candidates) {
    const response = await oauth.resourceDiscoveryRequest(candidate, { ...requestOptions(candidate), [oauth.customFetch]: upstreamFetch })
    const metadata = await protectedResourceOf(response, upstreamUrl)
    if (metadata !== undefined) return { metadata, ...scope }
  }
  return scope
}

/** A refusal of the discovery guard, where a fetch failed with it (undici wraps a connector's error). */
function refusalIn (err: unknown): SwitchboardError | undefined {
  let at: unknown = err
  for (let depth = 0; depth < 4 && at instanceof Error; depth++, at = at.cause) {
    if (at instanceof SwitchboardError) return at
  }
  return undefined
}

/**
 * RFC 8414 metadata of `issuer`, else OpenID Connect's. Both answers go through
 * processDiscoveryResponse, which refuses metadata whose `issuer` is not `issuer` (RFC 8414 §3.3,
 * compared as parsed URLs): metadata cannot speak for another server.
 */
async function discoverIssuer (issuer: string, guarded?: typeof fetch): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer)
  let lastError: unknown
  for (const algorithm of ['oauth2', 'oidc'] as const) {
    try {
      const response = await oauth.discoveryRequest(url, { ...requestOptions(url), algorithm, ...(guarded === undefined ? {} : { [oauth.customFetch]: guarded }) })
      if (response.status !== 200) {
        await response.body?.cancel()
        continue
      }
      return await oauth.processDiscoveryResponse(url, response)
    } catch (err: unknown) {
      const refusal = refusalIn(err)
      if (refusal !== undefined) throw refusal
      lastError = err
    }
  }
  throw discoveryFailed(`no RFC 8414 or OpenID Connect metadata for issuer ${url.origin}${url.pathname}`, lastError)
}

/** The authorization server an upstream's answers name, with every endpoint its metadata names checked. */
async function discoverGuarded (issuer: string, scope: DiscoveryScope): Promise<oauth.AuthorizationServer> {
  await scope.check(issuer, 'the authorization server it names')
  const as = await discoverIssuer(issuer, scope.fetch)
  for (const key of ENDPOINTS) {
    const value: unknown = as[key]
    if (value === undefined) continue
    if (typeof value !== 'string') throw discoveryRefused(scope.upstream, `the authorization server's ${key}`, '', 'it is not a URL')
    await scope.check(value, `the authorization server's ${key}`)
  }
  reachThrough(as, scope.fetch)
  return as
}

export function createAuthorizationServerDiscovery (options: DiscoveryOptions = {}): AuthorizationServerDiscovery {
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS
  const guard = options.guard ?? createDiscoveryGuard()

  const issuers = boundedCache<oauth.AuthorizationServer>(maxEntries, ttlMs)
  const upstreams = boundedCache<UpstreamAuthorization>(maxEntries, ttlMs)

  const forIssuer = (issuer: string): Promise<oauth.AuthorizationServer> => issuers(issuer, () => discoverIssuer(issuer))

  const discoverUpstream = async (name: string, url: string, configuredIssuer: string | undefined): Promise<UpstreamAuthorization> => {
    const canonical = canonicalResource(url)
    // The operator's issuer is trusted as written; only what the upstream's answers name is guarded.
    if (configuredIssuer !== undefined) return { as: await forIssuer(configuredIssuer), resource: canonical, scopes: [] }
    const scope = await guard.scopeFor({ name, url })
    let found: { metadata?: oauth.ResourceServer, scope?: string }
    try {
      found = await discoverResource(name, url, options.upstreamFetch ?? scope.upstreamFetch)
    } catch (err: unknown) {
      throw err instanceof SwitchboardError ? err : refusalIn(err) ?? discoveryFailed(`the upstream's protected-resource metadata could not be read (${(err as Error).message})`, err)
    } finally {
      await scope.close()
    }
    const scopes = found.scope !== undefined
      ? found.scope.split(' ').filter(s => s !== '')
      : [...(found.metadata?.scopes_supported ?? [])]
    // The metadata's resource when it covers the URL (what the SDK client sends too, and what the
    // server checks audiences against); the configured URL otherwise.
    const resource = found.metadata?.resource ?? canonical
    // No metadata at all: the 2025-03-26 rule, the authorization server at the upstream's origin.
    const issuer = found.metadata?.authorization_servers?.[0] ?? new URL(url).origin
    // Not the issuer cache: this server's requests go through this upstream's guard (reachThrough).
    return { as: await discoverGuarded(issuer, scope), resource, scopes }
  }

  return {
    forIssuer,
    forUpstream: ({ name, url, issuer }) => upstreams(`${name}\n${url}\n${issuer ?? ''}`, () => discoverUpstream(name, url, issuer))
  }
}
