import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import type { ConnectFlows } from '../credentials/connect-flows.ts'
import type { ConnectGate } from '../credentials/connect-gate.ts'
import type { CredentialRequest } from '../credentials/credential-provider.ts'
import type { CredentialProviders } from '../credentials/credential-providers.ts'
import { createUrlConnectGate } from '../credentials/url-connect-gate.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'

/** The per-user OAuth connect flow, as the gateway is given it. */
export interface ConnectOptions {
  flows: ConnectFlows
  /** Whether `who` must connect first; default: the upstream's credential provider's `needsConnect`. */
  needsConnect?: (upstream: string, who: CredentialRequest) => Promise<boolean>
  /** The Client ID Metadata Document the gateway serves for an upstream (GET /oauth/client/:upstream). */
  clientMetadata?: (upstream: string) => Record<string, unknown> | undefined
}

/** The upstreams whose auth has a connect flow (oauth: each user consents once). */
export function connectUpstreams (config: GatewayConfig): ReadonlySet<string> {
  return new Set(config.upstreams.filter(u => u.auth?.type === 'oauth').map(u => u.name))
}

export interface Connect {
  flows: ConnectFlows
  gate: ConnectGate
  options: ConnectOptions
  /** The gate while some upstream of the config in force has per-user OAuth; else undefined (nothing in the chain). */
  active: () => ConnectGate | undefined
}

/** The connect gate over the given flow: it guards the oauth upstreams of the config in force. */
export function createConnect (options: ConnectOptions | undefined, current: () => GatewayConfig, pool: UpstreamPool, credentials: CredentialProviders, log: Logger): Connect | undefined {
  if (options === undefined) return undefined
  let seen: GatewayConfig | undefined
  let guarded: ReadonlySet<string> = new Set()
  // Computed again only when a reload replaced the config: guards() stays a Set lookup.
  const upstreams = (): ReadonlySet<string> => {
    const config = current()
    if (config !== seen) {
      seen = config
      guarded = connectUpstreams(config)
    }
    return guarded
  }
  const needsConnect = options.needsConnect ?? (async (upstream: string, who: CredentialRequest): Promise<boolean> => {
    const config = pool.get(upstream)?.config
    if (config === undefined) return false
    return await credentials.for(config).needsConnect?.(config, who) ?? false
  })
  // A completed connect may have replaced a grant with another account's: the principal's connection
  // opened with the old one is closed (here; other replicas' close when the upstream refuses it).
  const inner = options.flows
  // Delegated one by one, not spread: a flow may be a class instance, whose methods a spread drops.
  const flows: ConnectFlows = {
    offers: (upstream) => inner.offers(upstream),
    linkFor: async (upstream, principal) => await inner.linkFor(upstream, principal),
    readLink: async (upstream, link) => await inner.readLink(upstream, link),
    spendLink: async (link) => await inner.spendLink(link),
    authorizationUrl: async (upstream, principal, browser, elicitationId) => await inner.authorizationUrl(upstream, principal, browser, elicitationId),
    connected: async (upstream, principal, signal) => { await inner.connected(upstream, principal, signal) },
    disconnect: async (upstream, principal) => await inner.disconnect(upstream, principal),
    list: async (principal) => await inner.list(principal),
    complete: async (query, browser) => {
      const done = await inner.complete(query, browser)
      await pool.dropPrincipal(done.upstream, done.principal).catch((err: unknown) => { log.warn({ err, upstream: done.upstream }, 'closing a principal\'s connection after a reconnect failed') })
      return done
    }
  }
  const gate = createUrlConnectGate({ flows, upstreams, needsConnect, log: log.child({ component: 'connect' }) })
  return { flows, gate, options, active: () => upstreams().size > 0 ? gate : undefined }
}
