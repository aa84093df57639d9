import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import type { UpstreamTool } from '../upstream/upstream-connection.ts'
import { buildCatalog, Catalog, type UpstreamTools } from './catalog.ts'

export type CatalogListener = (next: Catalog, previous: Catalog) => void

/**
 * Holds the current catalog and swaps in a new one whenever an upstream's tool list changes or
 * it comes or goes. A down upstream's last-known names stay reserved so survivors keep theirs.
 */
export class CatalogStore {
  private current: Catalog = new Catalog([], [])
  private readonly sources = new Map<string, UpstreamTools>()
  private readonly listeners = new Set<CatalogListener>()
  private readonly reported = new Set<string>()
  private readonly config: GatewayConfig
  private readonly log: Logger

  constructor (config: GatewayConfig, log: Logger) {
    this.config = config
    this.log = log
  }

  get catalog (): Catalog { return this.current }

  onChange (listener: CatalogListener): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /** Called by the pool: the upstream's tools, or undefined when it went down. */
  update (upstream: string, tools: readonly UpstreamTool[] | undefined): void {
    const priority = this.config.upstreams.findIndex(u => u.name === upstream)
    const config = this.config.upstreams[priority]
    if (config === undefined) return
    const known = this.sources.get(upstream)
    if (tools === undefined) {
      if (known === undefined || !known.live) return
      this.sources.set(upstream, { ...known, live: false })
    } else {
      this.sources.set(upstream, { config, priority, tools, live: true })
    }
    this.rebuild()
  }

  private rebuild (): void {
    const previous = this.current
    const next = buildCatalog([...this.sources.values()], this.config.catalog)
    this.current = next
    this.reportRenames(next)
    if (next.digest === previous.digest) return
    for (const listener of this.listeners) listener(next, previous)
  }

  private reportRenames (catalog: Catalog): void {
    for (const r of catalog.renamed) {
      const key = `${r.upstream}\0${r.tool}\0${r.exposed}`
      if (this.reported.has(key)) continue
      this.reported.add(key)
      this.log.warn({ upstream: r.upstream, tool: r.tool, exposed: r.exposed, reason: r.reason }, 'tool exposed under a changed name')
    }
  }
}
