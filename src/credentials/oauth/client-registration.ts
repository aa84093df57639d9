import * as oauth from 'oauth4webapi'
import type { OAuthAuth } from '../../config/upstream-auth-schema.ts'
import { SwitchboardError } from '../../errors.ts'
import type { TokenVault, VaultRecords } from '../vault/token-vault.ts'
import { serverOptions } from './http-options.ts'

/** The gateway as a client of one authorization server: its identity and how it authenticates. */
export interface OAuthClient {
  readonly client: oauth.Client
  readonly auth: oauth.ClientAuth
  /** How it came to be: configured, a metadata document URL, or dynamically registered. */
  readonly origin: 'configured' | 'metadata-document' | 'registered'
}

/** SEP-991 Client ID Metadata Document: the JSON the gateway serves at its client id URL. */
export interface ClientMetadataDocument {
  readonly client_id: string
  readonly client_name: string
  readonly redirect_uris: readonly string[]
  readonly grant_types: readonly string[]
  readonly response_types: readonly string[]
  readonly token_endpoint_auth_method: 'none'
}

const CLIENT_NAME = 'Switchboard'
const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const

function base (publicUrl: string): string {
  return publicUrl.replace(/\/+$/, '')
}

/** The one redirect URI of every upstream: the record of a state says which upstream a callback is for. */
export function redirectUriOf (publicUrl: string): string {
  return `${base(publicUrl)}/oauth/callback`
}

/** The client id the gateway uses where the authorization server reads Client ID Metadata Documents. */
export function clientMetadataDocumentUrl (publicUrl: string, upstream: string): string {
  return `${base(publicUrl)}/oauth/client/${encodeURIComponent(upstream)}`
}

/** What GET `clientMetadataDocumentUrl(publicUrl, upstream)` answers (application/json). */
export function clientMetadataDocument (publicUrl: string, upstream: string): ClientMetadataDocument {
  return {
    client_id: clientMetadataDocumentUrl(publicUrl, upstream),
    client_name: CLIENT_NAME,
    redirect_uris: [redirectUriOf(publicUrl)],
    grant_types: [...GRANT_TYPES],
    response_types: ['code'],
    token_endpoint_auth_method: 'none'
  }
}

/**
 * HTTP Basic client authentication (RFC 6749 §2.3.1): id and secret form-urlencoded, then base64.
 * oauth4webapi's own also escapes `-`, `_`, `.`, `~` and the like, which many servers never decode
 * (the MCP SDK's, the conformance suite's): "my-client" arrived as "my%2Dclient". Characters
 * encodeURIComponent leaves alone decode to themselves, so this is as correct and understood by all.
 */
export function clientSecretBasic (secret: string): oauth.ClientAuth {
  const encode = (value: string): string => encodeURIComponent(value).replace(/%20/g, '+')
  return (_as, client, _body, headers) => {
    headers.set('authorization', `Basic ${Buffer.from(`${encode(client.client_id)}:${encode(secret)}`).toString('base64')}`)
  }
}

/** A client secret is sent the way the server says it accepts: Basic (RFC 6749's default), else in the body. */
export function secretAuth (as: oauth.AuthorizationServer, secret: string, method?: string): oauth.ClientAuth {
  const supported = as.token_endpoint_auth_methods_supported
  const post = method === 'client_secret_post' ||
    (method === undefined && supported !== undefined && !supported.includes('client_secret_basic') && supported.includes('client_secret_post'))
  return post ? oauth.ClientSecretPost(secret) : clientSecretBasic(secret)
}

/** What a dynamic registration left for the next replica or restart (sealed in the vault's records). */
interface StoredRegistration { client_id: string, client_secret?: string, token_endpoint_auth_method?: string }

function fromRegistration (as: oauth.AuthorizationServer, stored: StoredRegistration): OAuthClient {
  const client: oauth.Client = { client_id: stored.client_id }
  const auth = stored.client_secret === undefined || stored.token_endpoint_auth_method === 'none'
    ? oauth.None()
    : secretAuth(as, stored.client_secret, stored.token_endpoint_auth_method)
  return { client, auth, origin: 'registered' }
}

function parseStored (text: string | undefined): StoredRegistration | undefined {
  if (text === undefined) return undefined
  const value: unknown = JSON.parse(text)
  if (typeof value !== 'object' || value === null || !('client_id' in value) || typeof value.client_id !== 'string') return undefined
  return value as StoredRegistration
}

/**
 * RFC 7591 wants `client_secret_expires_at` beside an issued secret, and oauth4webapi refuses the
 * registration without it; many servers leave it out (the MCP SDK's own among them). Absent, it is
 * read as RFC 7591's 0: the secret does not expire.
 */
async function withSecretExpiry (response: Response): Promise<Response> {
  if (response.status !== 201) return response
  let body: unknown
  try {
    body = await response.clone().json()
  } catch {
    return response
  }
  if (typeof body !== 'object' || body === null || !('client_secret' in body) || 'client_secret_expires_at' in body) return response
  await response.body?.cancel()
  return new Response(JSON.stringify({ ...body, client_secret_expires_at: 0 }), { status: response.status, headers: response.headers })
}

export interface ClientRegistry {
  /** The client for `upstream` at `as`, in the MCP spec's order: configured, metadata document, registered. */
  clientFor: (upstream: string, auth: OAuthAuth, as: oauth.AuthorizationServer) => Promise<OAuthClient>
}

export function createClientRegistry (options: { records: VaultRecords, vault: TokenVault, publicUrl: string }): ClientRegistry {
  const { records, vault, publicUrl } = options
  const registered = new Map<string, Promise<OAuthClient>>()

  const register = async (upstream: string, as: oauth.AuthorizationServer): Promise<OAuthClient> => {
    const key = `client:${upstream}:${as.issuer}`
    const existing = parseStored(await records.get(key))
    if (existing !== undefined) return fromRegistration(as, existing)
    // One registration for every replica: the first to hold the lock registers, the others read its record.
    return await vault.exclusive({ upstream, principal: `registration:${as.issuer}` }, async () => {
      const again = parseStored(await records.get(key))
      if (again !== undefined) return fromRegistration(as, again)
      const supported = as.token_endpoint_auth_methods_supported ?? ['client_secret_basic']
      const method = ['client_secret_basic', 'client_secret_post', 'none'].find(m => supported.includes(m)) ?? 'none'
      let response: Response
      let result: Awaited<ReturnType<typeof oauth.processDynamicClientRegistrationResponse>>
      try {
        response = await oauth.dynamicClientRegistrationRequest(as, {
          client_name: CLIENT_NAME,
          redirect_uris: [redirectUriOf(publicUrl)],
          grant_types: [...GRANT_TYPES],
          response_types: ['code'],
          token_endpoint_auth_method: method,
          // SEP-837 (2026-07-28): say which kind of client registers; the gateway is a web server.
          application_type: 'web'
        }, serverOptions(as))
        result = await oauth.processDynamicClientRegistrationResponse(await withSecretExpiry(response))
      } catch (err: unknown) {
        // The response may carry the issued secret: only the library's message travels.
        const detail = err instanceof oauth.ResponseBodyError ? err.error : (err as Error).message
        throw new SwitchboardError('SB_ERR_UPSTREAM_OAUTH_CLIENT', `dynamic client registration at ${as.issuer} failed (${detail}); configure a pre-registered clientId for upstream ${upstream}`)
      }
      const stored: StoredRegistration = { client_id: result.client_id }
      if (typeof result.client_secret === 'string') stored.client_secret = result.client_secret
      if (typeof result.token_endpoint_auth_method === 'string') stored.token_endpoint_auth_method = result.token_endpoint_auth_method
      const expiresAt = typeof result.client_secret_expires_at === 'number' && result.client_secret_expires_at > 0 ? result.client_secret_expires_at * 1000 : undefined
      await records.set(key, JSON.stringify(stored), expiresAt === undefined ? undefined : Math.max(1, expiresAt - Date.now()))
      return fromRegistration(as, stored)
    })
  }

  return {
    clientFor: async (upstream, auth, as) => {
      if (auth.clientId !== undefined) {
        return {
          client: { client_id: auth.clientId },
          auth: auth.clientSecret === undefined ? oauth.None() : secretAuth(as, auth.clientSecret),
          origin: 'configured'
        }
      }
      // A client id must be an https URL (Client ID Metadata Documents): a plain-http gateway registers instead.
      if (as.client_id_metadata_document_supported === true && publicUrl.startsWith('https://')) {
        return { client: { client_id: clientMetadataDocumentUrl(publicUrl, upstream) }, auth: oauth.None(), origin: 'metadata-document' }
      }
      if (as.registration_endpoint === undefined) {
        throw new SwitchboardError('SB_ERR_UPSTREAM_OAUTH_CLIENT', `the authorization server ${as.issuer} of upstream ${upstream} offers neither Client ID Metadata Documents (for a gateway whose http.publicUrl is https) nor Dynamic Client Registration: register a client there with redirect URI ${redirectUriOf(publicUrl)} and configure its clientId (and clientSecret) in upstream ${upstream}'s auth block`)
      }
      const key = `${upstream}\n${as.issuer}`
      let pending = registered.get(key)
      if (pending === undefined) {
        pending = register(upstream, as)
        registered.set(key, pending)
        pending.catch(() => { if (registered.get(key) === pending) registered.delete(key) })
      }
      return await pending
    }
  }
}
