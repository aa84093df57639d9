import type { CatalogStore } from '../catalog/catalog-store.ts'
import type { GatewayConfig } from '../config/schema.ts'
import type { ConnectGate } from '../credentials/connect-gate.ts'
import { listsThroughUsers } from '../credentials/lists-through-users.ts'
import { SwitchboardError } from '../errors.ts'
import type { CallContext } from '../session/call-context.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'

/**
 * An upstream that lists through its users (per-user OAuth without a listing credential, token
 * exchange) has no catalog until one of them connects, and none is remembered yet on a fresh
 * deployment. The first user's call of one of its tools, by the name an agent would give it, opens
 * that user's connection (asking them to connect first, where needed) so the catalog learns it.
 */
export interface FirstListing {
  /** The upstream with no known lists that `exposed` (a tool name the catalog does not know) would belong to. */
  upstreamOf: (exposed: string) => string | undefined
  /** Opens the caller's own connection to `upstream` and waits, bounded by its connect timeout, for its lists. */
  list: (upstream: string, ctx: CallContext) => Promise<void>
}

export interface FirstListingDeps {
  pool: UpstreamPool
  catalogs: CatalogStore
  config: () => GatewayConfig
  gate: () => ConnectGate | undefined
}

export function createFirstListing (deps: FirstListingDeps): FirstListing {
  const { pool, catalogs } = deps
  return {
    upstreamOf (exposed) {
      const { upstreams, catalog } = deps.config()
      for (const u of upstreams) {
        if (!listsThroughUsers(u) || catalogs.has(u.name)) continue
        const prefix = u.prefix ?? u.name
        // Without a prefix the name says nothing of its upstream.
        if (prefix !== '' && exposed.startsWith(prefix + catalog.separator)) return u.name
      }
      return undefined
    },
    async list (upstream, ctx) {
      const gate = deps.gate()
      if (gate?.guards(upstream) === true) await gate.admit(upstream, ctx)
      const connection = pool.connectionFor(upstream, ctx.session)
      if (connection === undefined) throw new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE', `upstream ${upstream} is not configured`)
      connection.presented(ctx.token)
      const timeoutMs = connection.config.connectTimeoutMs
      await new Promise<void>((resolve, reject) => {
        if (catalogs.has(upstream)) {
          resolve()
          return
        }
        let stop = (): void => {}
        const timer = setTimeout(() => {
          stop()
          reject(new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE', `upstream ${upstream} did not list its tools within ${timeoutMs} ms`))
        }, timeoutMs)
        stop = catalogs.onChange(() => {
          if (!catalogs.has(upstream)) return
          clearTimeout(timer)
          stop()
          resolve()
        })
      })
    }
  }
}
