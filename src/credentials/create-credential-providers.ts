import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import type { TokensConfig } from '../config/upstream-auth-schema.ts'
import type { OnAuthOutcome } from './auth-outcome.ts'
import { ClientCredentialsProvider } from './client-credentials-provider.ts'
import type { ConnectFlows } from './connect-flows.ts'
import { CredentialProviders } from './credential-providers.ts'
import { OAuthCredentialProvider } from './oauth-credential-provider.ts'
import { createAuthorizationServerDiscovery } from './oauth/authorization-server.ts'
import { clientMetadataDocument, createClientRegistry, type ClientMetadataDocument } from './oauth/client-registration.ts'
import { createConfiguredEndpoints } from './oauth/configured-endpoint.ts'
import { createConnectFlows } from './oauth/connect-flows.ts'
import { createConnectSigner, createKeyDeriver } from './oauth/connect-signing.ts'
import { createDiscoveryGuard, type Listener } from './oauth/discovery-guard.ts'
import { createOAuthContexts } from './oauth/upstream-oauth.ts'
import { TokenExchangeProvider } from './token-exchange-provider.ts'
import { principalKey, type TokenVault, type VaultRecords } from './vault/token-vault.ts'

export interface CreateCredentialProvidersOptions {
  vault: TokenVault
  records: VaultRecords
  /** The gateway's external base URL (http.publicUrl, or derived from the listen address). */
  publicUrl: string
  /** Connect states and links are signed with keys derived from tokens.encryptionKey (random without one). */
  tokens?: TokensConfig | undefined
  /** The upstream of that name in the current config (reload replaces it). */
  upstreams: (name: string) => UpstreamConfig | undefined
  log: Logger
  /** switchboard_upstream_auth_total{upstream,type,outcome} */
  onOutcome?: OnAuthOutcome | undefined
  /** http.connect.linkTtlMs (10 minutes when absent). */
  linkTtlMs?: number | undefined
  /** http.connect.apiKeys in force. */
  apiKeys?: () => 'form' | 'refuse'
  /** The gateway's own listeners (listen, admin.listen): discovery never fetches them. */
  listeners?: (() => readonly Listener[]) | undefined
}

export interface CredentialServices {
  providers: CredentialProviders
  connectFlows: ConnectFlows
  /** The Client ID Metadata Document served at <publicUrl>/oauth/client/<upstream>, for oauth upstreams. */
  clientMetadataDocument: (upstream: string) => ClientMetadataDocument | undefined
}

/** Every auth type's provider and the connect flow, over one vault, one discovery cache and one client registry. */
export function createCredentialProviders (options: CreateCredentialProvidersOptions): CredentialServices {
  const { vault, records, publicUrl, log, onOutcome } = options
  const discovery = createAuthorizationServerDiscovery({ guard: createDiscoveryGuard({ listeners: options.listeners, publicUrl }) })
  const clients = createClientRegistry({ records, vault, publicUrl })
  const contexts = createOAuthContexts({ discovery, clients, publicUrl })
  const endpoints = createConfiguredEndpoints(discovery)
  const signer = createConnectSigner(createKeyDeriver(options.tokens?.encryptionKey), options.linkTtlMs)
  const oauth = new OAuthCredentialProvider({ vault, contexts, log, onOutcome })
  const providers = new CredentialProviders({
    oauth: () => oauth,
    client_credentials: () => new ClientCredentialsProvider({ vault, endpoints, log, onOutcome }),
    token_exchange: () => new TokenExchangeProvider({ vault, endpoints, log, onOutcome })
  })
  const flows = createConnectFlows({ vault, records, publicUrl, signer, contexts, upstreams: options.upstreams, log, onOutcome, apiKeys: options.apiKeys })
  const connectFlows: ConnectFlows = {
    ...flows,
    // A reconnect replaces the grant: this replica uses the new one at once (others within the vault recheck).
    complete: async (query, browser) => {
      const done = await flows.complete(query, browser)
      oauth.forget({ upstream: done.upstream, principal: principalKey(done.principal) })
      return done
    },
    disconnect: async (upstream, principal) => {
      const had = await flows.disconnect(upstream, principal)
      oauth.forget({ upstream, principal })
      return had
    }
  }
  return {
    providers,
    connectFlows,
    clientMetadataDocument: (upstream) => options.upstreams(upstream)?.auth?.type === 'oauth' ? clientMetadataDocument(publicUrl, upstream) : undefined
  }
}
