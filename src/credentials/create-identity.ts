import { createHash } from 'node:crypto'
import type { Logger } from 'pino'
import type { GatewayConfig, UpstreamConfig } from '../config/schema.ts'
import { SwitchboardError } from '../errors.ts'
import type { ChildCredentials, CredentialHeaders, CredentialProvider } from './credential-provider.ts'
import type { TokensConfig } from '../config/upstream-auth-schema.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { UpstreamLists } from '../upstream/upstream-lists.ts'
import { createCredentialProviders } from './create-credential-providers.ts'
import { CredentialProviders } from './credential-providers.ts'
import type { ConnectFlows } from './connect-flows.ts'
import { listsThroughUsers } from './lists-through-users.ts'
import { createVault } from './vault/create-vault.ts'
import type { VaultRecords } from './vault/token-vault.ts'

/** How the gateway authenticates to its upstreams: the providers by auth type and, for oauth, the connect flow. */
export interface Identity {
  providers: CredentialProviders
  /** The per-user connect flow, when the vault exists (some upstream has an auth block, or `tokens` is configured). */
  connect: { flows: ConnectFlows, clientMetadata: (upstream: string) => Record<string, unknown> | undefined } | undefined
  /**
   * A per-user upstream's listing, as a connected principal's connection last received it: kept for
   * everyone else. Resolves with the version kept (its digest), or undefined when it could not be (logged here).
   */
  rememberListing: (upstream: string, lists: UpstreamLists) => Promise<string | undefined>
  /** The listing remembered for one per-user upstream, as the store holds it now; throws when the store cannot answer. */
  rememberedListing: (upstream: string) => Promise<RememberedListing | undefined>
  /** The listings remembered for per-user upstreams that cannot list themselves (no `auth.listing`), by upstream. */
  rememberedListings: () => Promise<Array<{ upstream: string } & RememberedListing>>
  /** Every replica reads the listings this one remembers (the vault is in Redis, under a configured key). */
  readonly listingsShared: boolean
  close: () => Promise<void>
}

export interface IdentityOptions {
  config: GatewayConfig
  /** The config in force (reloads replace it). */
  current: () => GatewayConfig
  configPath?: string | undefined
  log: Logger
  metrics: Metrics
}

export interface RememberedListing {
  lists: UpstreamLists
  /** What tells two listings apart: a digest of the record. */
  version: string
}

const LISTING_PREFIX = 'listing:'

/** A listing's version: the same lists give the same version on every replica. */
export function listingVersion (text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22)
}

/** The external base URL: `http.publicUrl`, else the listen address (a wildcard host is named as loopback). */
export function publicUrlOf (config: GatewayConfig): string {
  if (config.http.publicUrl !== undefined) return config.http.publicUrl.replace(/\/+$/, '')
  const host = ['0.0.0.0', '::', '[::]'].includes(config.listen.host) ? '127.0.0.1' : config.listen.host
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${config.listen.port}`
}

/** Upstreams whose own connection cannot list: the catalog needs a remembered listing. */
function listedByUsers (config: GatewayConfig): string[] {
  return config.upstreams.filter(listsThroughUsers).map(u => u.name)
}

/**
 * The identity services the config asks for. A config without any upstream `auth` block (nor a
 * `tokens` block) gets the static provider alone: no vault, no file, no key.
 */
export function createIdentity (options: IdentityOptions): Identity {
  const { config, log, metrics } = options
  if (config.tokens === undefined && !config.upstreams.some(u => u.auth !== undefined)) {
    const later = (): CredentialProvider => new NeedsRestart()
    const providers = new CredentialProviders({ oauth: later, client_credentials: later, token_exchange: later })
    return { providers, connect: undefined, rememberListing: async () => undefined, rememberedListing: async () => undefined, rememberedListings: async () => [], listingsShared: false, close: async () => {} }
  }
  // Without a key, records sealed by this process could never be read again: a file would only collect them.
  const tokens: TokensConfig | undefined = config.tokens === undefined || (config.tokens.encryptionKey === undefined && config.tokens.store === 'auto')
    ? { previousKeys: [], ...config.tokens, store: 'memory' }
    : config.tokens
  const { vault, records, store } = createVault({
    tokens,
    redis: config.redis,
    configPath: options.configPath,
    log: log.child({ component: 'tokens' }),
    onFault: (op) => { metrics.tokenStoreErrors.inc({ op }) }
  })
  log.info({ store }, 'upstream token vault ready')
  const services = createCredentialProviders({
    vault,
    records,
    publicUrl: publicUrlOf(config),
    tokens: config.tokens,
    upstreams: (name) => options.current().upstreams.find(u => u.name === name),
    log: log.child({ component: 'credentials' }),
    listeners: () => { const c = options.current(); return c.admin === undefined ? [c.listen] : [c.listen, c.admin.listen] },
    onOutcome: (upstream, type, outcome) => { metrics.upstreamAuth.inc({ upstream, type, outcome }) },
    linkTtlMs: config.http.connect.linkTtlMs,
    apiKeys: () => options.current().http.connect.apiKeys
  })
  return {
    providers: services.providers,
    connect: { flows: services.connectFlows, clientMetadata: (upstream) => services.clientMetadataDocument(upstream) as Record<string, unknown> | undefined },
    rememberListing: async (upstream, lists) => {
      const text = JSON.stringify(lists)
      try {
        await records.set(LISTING_PREFIX + upstream, text)
        return listingVersion(text)
      } catch (err: unknown) {
        log.warn({ err, upstream }, 'could not keep the listing of a per-user upstream; users who have not connected see it when a connected user lists it again')
        return undefined
      }
    },
    rememberedListing: async (upstream) => await rememberedListing(records, upstream),
    rememberedListings: async () => await rememberedListings(records, listedByUsers(options.current()), log),
    // A key made at start seals records no other replica can open.
    listingsShared: store === 'redis' && tokens.encryptionKey !== undefined,
    close: async () => { await vault.close() }
  }
}

/**
 * An auth block a reload brought to a gateway that started without any: the vault and the connect
 * routes are set up at start, so that upstream's requests fail with a clear error until a restart.
 */
class NeedsRestart implements CredentialProvider {
  readonly type = 'needs_restart'
  async headersFor (upstream: UpstreamConfig): Promise<CredentialHeaders> {
    throw new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `upstream ${upstream.name} got an auth block by a reload, and the token vault is set up at start: restart the gateway`)
  }

  async childEnvFor (): Promise<ChildCredentials> {
    return { env: {}, args: [] }
  }
}

async function rememberedListing (records: VaultRecords, upstream: string): Promise<RememberedListing | undefined> {
  const text = await records.get(LISTING_PREFIX + upstream)
  return text === undefined ? undefined : { lists: JSON.parse(text) as UpstreamLists, version: listingVersion(text) }
}

async function rememberedListings (records: VaultRecords, upstreams: readonly string[], log: Logger): Promise<Array<{ upstream: string } & RememberedListing>> {
  const found: Array<{ upstream: string } & RememberedListing> = []
  for (const upstream of upstreams) {
    try {
      const listing = await rememberedListing(records, upstream)
      if (listing !== undefined) found.push({ upstream, ...listing })
    } catch (err: unknown) {
      log.warn({ err, upstream }, 'could not read the remembered listing of a per-user upstream; its tools appear once a connected user lists them')
    }
  }
  return found
}
