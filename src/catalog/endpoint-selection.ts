import type { EndpointAnnotations, EndpointConfig } from '../config/endpoints-schema.ts'
import type { Catalog, CatalogEntry } from './catalog.ts'
import type { CatalogKind, CatalogStore } from './catalog-store.ts'
import type { AccessView } from './catalog-view.ts'
import { createMatcher } from './naming.ts'

/** What a tool leaves out of its annotations means the MCP default (2025-11-25 §ToolAnnotations). */
const ANNOTATION_DEFAULTS: Required<EndpointAnnotations> = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }

/**
 * One endpoint's slice of the catalogs: tools by exposed-name globs, upstreams and annotations;
 * prompts and resources by upstream alone. It decides on the current catalogs, so it follows every
 * change; the answers for tools are remembered per catalog version.
 */
export class EndpointSelection {
  readonly config: EndpointConfig
  private readonly catalogs: CatalogStore
  private readonly included: (name: string) => boolean
  private readonly excluded: (name: string) => boolean
  private readonly upstreams: ReadonlySet<string> | undefined
  private readonly annotations: ReadonlyArray<[string, boolean]>
  private readonly filtersTools: boolean
  private remembered: { catalog: Catalog, tools: Map<string, boolean> } | undefined
  /** One composed view per policy view, so digests stay cached per (principal, endpoint). */
  private readonly views = new WeakMap<AccessView, AccessView>()

  constructor (config: EndpointConfig, catalogs: CatalogStore) {
    this.config = config
    this.catalogs = catalogs
    this.included = createMatcher(config.tools.include)
    this.excluded = createMatcher(config.tools.exclude)
    this.upstreams = config.upstreams === undefined ? undefined : new Set(config.upstreams)
    this.annotations = Object.entries(config.annotations ?? {}).filter((e): e is [string, boolean] => typeof e[1] === 'boolean')
    this.filtersTools = !(config.tools.include.includes('*') && config.tools.exclude.length === 0 && this.annotations.length === 0)
  }

  get name (): string { return this.config.name }
  get searches (): boolean { return this.config.discovery === 'search' }

  /** Whether the endpoint shows this item; `upstream` when the caller knows it (resources it cannot always be looked up). */
  selects (kind: CatalogKind, name: string, upstream?: string): boolean {
    if (kind === 'resources') return this.fromUpstream(upstream ?? this.resourceUpstream(name))
    if (kind === 'prompts') return this.fromUpstream(upstream ?? (this.catalogs.prompts.resolve(name)?.upstream))
    return this.selectsTool(name)
  }

  /** The policy's view narrowed to this endpoint. */
  view (policy: AccessView): AccessView {
    let view = this.views.get(policy)
    if (view === undefined) {
      view = {
        unrestricted: false,
        allows: (kind, name, upstream) => this.selects(kind, name, upstream) && policy.allows(kind, name, upstream)
      }
      this.views.set(policy, view)
    }
    return view
  }

  private fromUpstream (upstream: string | undefined): boolean {
    if (this.upstreams === undefined) return true
    return upstream !== undefined && this.upstreams.has(upstream)
  }

  private resourceUpstream (key: string): string | undefined {
    const { resources } = this.catalogs
    return resources.routeTemplate(key) ?? resources.route(key)
  }

  private selectsTool (name: string): boolean {
    const catalog = this.catalogs.tools
    if (this.remembered?.catalog !== catalog) this.remembered = { catalog, tools: new Map() }
    const known = this.remembered.tools.get(name)
    if (known !== undefined) return known
    // A quarantined tool keeps its place in the endpoint, so a call is refused with the reason.
    const entry = catalog.resolve(name) ?? catalog.quarantined(name)
    // Only names the catalog has are remembered: the map stays as small as the catalog.
    if (entry === undefined) return false
    const selected = this.toolMatches(entry)
    this.remembered.tools.set(name, selected)
    return selected
  }

  private toolMatches (entry: CatalogEntry): boolean {
    if (!this.fromUpstream(entry.upstream)) return false
    if (!this.filtersTools) return true
    if (!this.included(entry.exposed) || this.excluded(entry.exposed)) return false
    if (this.annotations.length === 0) return true
    const given = entry.definition.annotations
    const annotations = typeof given === 'object' && given !== null ? given as Record<string, unknown> : {}
    return this.annotations.every(([hint, wanted]) => (typeof annotations[hint] === 'boolean' ? annotations[hint] : ANNOTATION_DEFAULTS[hint as keyof EndpointAnnotations]) === wanted)
  }
}
