import { z } from 'zod'

// How the gateway authenticates to an upstream (an upstream's `auth` block), and the vault that
// keeps the tokens it obtains (`tokens`). Secrets come as ${VAR} references, expanded at load.

const url = z.string().url()
const secret = z.string().min(1)

const tokenEndpointOf = {
  issuer: url.optional().describe('the authorization server; its metadata names the token endpoint'),
  tokenEndpoint: url.optional().describe('the token endpoint, used as given (instead of issuer)')
}

export const DEFAULT_RETRY_AFTER_REFUSAL_MS = 30_000

// A refusal is that caller's alone; repeating it at once would be refused again, on their behalf.
const retryAfterRefusalMs = z.number().int().min(0).max(3_600_000).default(DEFAULT_RETRY_AFTER_REFUSAL_MS)
  .describe('after the authorization server refused a caller\'s token exchange or refresh, the same credential is not presented again for this long: that caller\'s calls fail at once with the same error code, saying when to retry (a new credential is tried at once; 0: every call tries)')

/** `issuer` (discovered through RFC 8414 / OpenID metadata) or `tokenEndpoint` (used as given): exactly one. */
function oneEndpoint (a: { issuer?: unknown, tokenEndpoint?: unknown }, ctx: z.RefinementCtx): void {
  if (typeof a !== 'object' || a === null) return
  if ((a.issuer === undefined) === (a.tokenEndpoint === undefined)) ctx.addIssue({ code: 'custom', path: ['issuer'], message: 'give exactly one of issuer and tokenEndpoint' })
}

export const oauthAuthSchema = z.strictObject({
  type: z.literal('oauth').describe('each user connects their own account (authorization code with PKCE), once'),
  clientId: secret.optional().describe('a client pre-registered at the upstream\'s authorization server; absent: a Client ID Metadata Document or Dynamic Client Registration, as the server offers'),
  clientSecret: secret.optional().describe('the pre-registered client\'s secret (a confidential client); take it from the environment'),
  issuer: url.optional().describe('the authorization server; absent: discovered from the upstream\'s 401 (RFC 9728 protected-resource metadata)'),
  scopes: z.array(z.string().min(1)).optional().describe('scopes asked for; absent: those the upstream\'s challenge or metadata names'),
  listing: z.strictObject({
    headers: z.record(z.string(), z.string()).describe('headers of a service credential the gateway lists the upstream\'s tools with')
  }).optional().describe('a service credential for listing; absent: users who have not connected see the last listing a connected user received'),
  retryAfterRefusalMs
})

export const clientCredentialsAuthSchema = z.strictObject({
  type: z.literal('client_credentials').describe('the gateway acts as one service account (OAuth client credentials grant)'),
  ...tokenEndpointOf,
  clientId: secret.describe('the service account\'s client id'),
  clientSecret: secret.describe('its secret; take it from the environment'),
  scope: z.string().min(1).optional().describe('the scope asked for (space-separated)'),
  resource: url.optional().describe('RFC 8707 resource (the upstream\'s URL when absent)')
}).superRefine(oneEndpoint, { when: () => true })

export const tokenExchangeAuthSchema = z.strictObject({
  type: z.literal('token_exchange').describe('the caller\'s JWT is exchanged for a token for this upstream (RFC 8693)'),
  ...tokenEndpointOf,
  clientId: secret.describe('the gateway\'s client id at the token endpoint'),
  clientSecret: secret.describe('its secret; take it from the environment'),
  audience: z.string().min(1).optional().describe('the audience of the token asked for'),
  resource: url.optional().describe('RFC 8707 resource (the upstream\'s URL when neither audience nor resource is given)'),
  scope: z.string().min(1).optional().describe('the scope asked for (space-separated)'),
  requestedTokenType: z.string().min(1).default('urn:ietf:params:oauth:token-type:access_token').describe('the requested_token_type of the exchange'),
  retryAfterRefusalMs
}).superRefine(oneEndpoint, { when: () => true })

export const upstreamAuthSchema = z.discriminatedUnion('type', [
  oauthAuthSchema,
  clientCredentialsAuthSchema,
  tokenExchangeAuthSchema
]).describe('how the gateway authenticates to this upstream: oauth (each user, authorization code with PKCE), client_credentials (a service account), token_exchange (RFC 8693, the caller\'s JWT exchanged); absent: its static headers')

export type OAuthAuth = z.output<typeof oauthAuthSchema>
export type ClientCredentialsAuth = z.output<typeof clientCredentialsAuthSchema>
export type TokenExchangeAuth = z.output<typeof tokenExchangeAuthSchema>
export type UpstreamAuth = z.output<typeof upstreamAuthSchema>

const KEY_BYTES = 32
const base64Key = z.string().refine(s => Buffer.from(s, 'base64').length === KEY_BYTES, `must be ${KEY_BYTES} bytes, base64`)

export const tokensSchema = z.strictObject({
  encryptionKey: base64Key.optional().describe('AES-256-GCM key of the token vault (32 bytes, base64); take it from the environment. Absent: a key made at start (tokens do not survive a restart, and replicas cannot read each other\'s)'),
  previousKeys: z.array(base64Key).default([]).describe('keys records may still be sealed with: read, then sealed again with encryptionKey'),
  store: z.enum(['auto', 'memory', 'file', 'redis']).default('auto').describe('auto: redis when the redis block is configured, else a file beside the config, else memory'),
  file: z.string().min(1).optional().describe('the file store\'s path (default: switchboard-tokens.json beside the config), written with mode 0600')
}).describe('the vault of upstream tokens obtained for users and service accounts')

export type TokensConfig = z.output<typeof tokensSchema>
