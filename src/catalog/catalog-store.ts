import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import type { UpstreamLists } from '../upstream/upstream-lists.ts'
import { buildCatalog, Catalog, type HeldBy, type UpstreamSource } from './catalog.ts'
import type { ResourceCatalog } from './resource-catalog.ts'
import { buildResourceCatalog } from './resource-catalog.ts'

/** What a downstream list_changed notification is about. */
export type CatalogKind = 'tools' | 'prompts' | 'resources'
export const CATALOG_KINDS: readonly CatalogKind[] = ['tools', 'prompts', 'resources']

export type CatalogListener = (changed: ReadonlySet<CatalogKind>) => void

/**
 * Reviews an upstream's tools as they enter the catalog (tool pinning, the definition scan);
 * returns the ones to quarantine. `catalog`: every tool the catalog serves now, which the scan
 * reads for references to other upstreams' tools.
 */
export interface ToolGate {
  review: (upstream: string, tools: UpstreamLists['tools'], catalog: Catalog['entries']) => ReadonlyMap<string, HeldBy>
}

/**
 * Holds the current catalogs (tools, prompts, resources) and swaps in new ones whenever an
 * upstream's lists change or it comes or goes. A down upstream's last-known names stay reserved
 * so survivors keep theirs.
 */
export class CatalogStore {
  private toolsValue: Catalog = new Catalog([], [])
  private promptsValue: Catalog = new Catalog([], [])
  private resourcesValue: ResourceCatalog = buildResourceCatalog([])
  private readonly sources = new Map<string, UpstreamSource>()
  private readonly listeners = new Set<CatalogListener>()
  private readonly reported = new Set<string>()
  private config: GatewayConfig
  private readonly log: Logger
  private readonly gate: ToolGate | undefined

  constructor (config: GatewayConfig, log: Logger, gate?: ToolGate) {
    this.config = config
    this.log = log
    this.gate = gate
  }

  get tools (): Catalog { return this.toolsValue }
  get prompts (): Catalog { return this.promptsValue }
  get resources (): ResourceCatalog { return this.resourcesValue }

  /** Whether any lists of `upstream` are known (live or last known). */
  has (upstream: string): boolean {
    return this.sources.has(upstream)
  }

  digest (kind: CatalogKind): string {
    return kind === 'tools' ? this.toolsValue.digest : kind === 'prompts' ? this.promptsValue.digest : this.resourcesValue.digest
  }

  onChange (listener: CatalogListener): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /**
   * Called by the pool: the upstream's lists, or undefined when they are no longer to be served. A
   * connection that is lost and restarting reports nothing: its last-known lists stay, so a restart
   * that brings back the same lists changes no digest and sends no list_changed.
   */
  update (upstream: string, lists: UpstreamLists | undefined): void {
    const priority = this.config.upstreams.findIndex(u => u.name === upstream)
    const config = this.config.upstreams[priority]
    if (config === undefined) return
    const known = this.sources.get(upstream)
    if (lists === undefined) {
      if (known === undefined || !known.live) return
      this.sources.set(upstream, { ...known, live: false })
    } else {
      this.sources.set(upstream, { config, priority, lists, live: true, held: this.gate?.review(upstream, lists.tools, this.toolsValue.entries) })
    }
    const names = this.toolNames()
    this.rebuild()
    // New tool names may be named by the definitions already reviewed (shadowing): review them again.
    if (this.gate !== undefined && this.toolNames() !== names) this.recheck()
  }

  private toolNames (): string {
    return this.toolsValue.entries.map(e => e.exposed).join('\0')
  }

  /**
   * A reload: the upstreams' new configs (filters, renames, prefixes, order) and catalog options
   * apply to the lists already known; a removed upstream's items go at once. A changed upstream's
   * new connection reports its lists as usual.
   */
  reconfigure (config: GatewayConfig): void {
    this.config = config
    const placed = new Map(config.upstreams.map((upstream, priority) => [upstream.name, { upstream, priority }]))
    for (const [name, source] of [...this.sources]) {
      const next = placed.get(name)
      if (next === undefined) this.sources.delete(name)
      else this.sources.set(name, { ...source, config: next.upstream, priority: next.priority })
    }
    this.rebuild()
  }

  /** The gate's decisions changed (an approval): review every live upstream's tools again. */
  recheck (): void {
    if (this.gate === undefined) return
    for (const [name, source] of this.sources) {
      if (source.live) this.sources.set(name, { ...source, held: this.gate.review(name, source.lists.tools, this.toolsValue.entries) })
    }
    this.rebuild()
  }

  private rebuild (): void {
    const sources = [...this.sources.values()]
    const changed = new Set<CatalogKind>()
    const tools = buildCatalog(sources, this.config.catalog, 'tools')
    if (tools.digest !== this.toolsValue.digest) changed.add('tools')
    this.toolsValue = tools
    const prompts = buildCatalog(sources, this.config.catalog, 'prompts')
    if (prompts.digest !== this.promptsValue.digest) changed.add('prompts')
    this.promptsValue = prompts
    const resources = buildResourceCatalog(sources)
    if (resources.digest !== this.resourcesValue.digest) changed.add('resources')
    this.resourcesValue = resources
    this.report(tools, 'tool')
    this.report(prompts, 'prompt')
    for (const c of resources.collisions) {
      this.once(`${c.kind}\0${c.key}\0${c.hidden}`, () => {
        this.log.warn({ [c.kind === 'resource' ? 'uri' : 'uriTemplate']: c.key, servedBy: c.served, hiddenFrom: c.hidden }, `${c.kind} offered by two upstreams; the first in config order serves it`)
      })
    }
    if (changed.size === 0) return
    for (const listener of this.listeners) listener(changed)
  }

  private report (catalog: Catalog, what: string): void {
    for (const r of catalog.renamed) {
      this.once(`${what}\0${r.upstream}\0${r.tool}\0${r.exposed}`, () => {
        this.log.warn({ upstream: r.upstream, [what]: r.tool, exposed: r.exposed, reason: r.reason }, `${what} exposed under a changed name`)
      })
    }
  }

  private once (key: string, report: () => void): void {
    if (this.reported.has(key)) return
    this.reported.add(key)
    report()
  }
}
