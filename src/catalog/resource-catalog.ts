import { createHash } from 'node:crypto'
import type { UpstreamItem } from '../upstream/upstream-lists.ts'
import type { UpstreamSource } from './catalog.ts'
import { anyFrom, decodeCursor, encodeCursor } from './cursor.ts'
import { createMatcher } from './naming.ts'
import { templateMatcher } from './uri-template.ts'

export interface ResourceEntry {
  /** The URI (resources) or URI template (templates), exactly as the upstream gave it. */
  readonly key: string
  readonly upstream: string
  readonly definition: UpstreamItem
}

interface TemplateRoute { readonly upstream: string, readonly matcher: RegExp, readonly priority: number }

/** Two upstreams offered the same URI or template: the first in config order serves it. */
export interface ResourceCollision { kind: 'resource' | 'template', key: string, served: string, hidden: string }

export interface ResourcePage { items: UpstreamItem[], nextCursor?: string }

/**
 * Every live upstream's resources and templates with their URIs untouched (rewriting them would
 * break resource_link and embedded resources), sorted for stable keyset pages, plus the routing
 * table that sends a URI to the upstream that owns it.
 */
export class ResourceCatalog {
  readonly resources: readonly ResourceEntry[]
  readonly templates: readonly ResourceEntry[]
  readonly collisions: readonly ResourceCollision[]
  readonly digest: string
  private readonly byUri: ReadonlyMap<string, ResourceEntry>
  private readonly byTemplate: ReadonlyMap<string, ResourceEntry>
  private readonly routes: readonly TemplateRoute[]

  constructor (resources: ResourceEntry[], templates: ResourceEntry[], routes: TemplateRoute[], collisions: ResourceCollision[]) {
    const byKey = (a: ResourceEntry, b: ResourceEntry): number => a.key < b.key ? -1 : a.key > b.key ? 1 : 0
    this.resources = resources.sort(byKey)
    this.templates = templates.sort(byKey)
    this.routes = routes.sort((a, b) => a.priority - b.priority)
    this.collisions = collisions
    this.byUri = new Map(resources.map(e => [e.key, e]))
    this.byTemplate = new Map(templates.map(e => [e.key, e]))
    this.digest = createHash('sha256').update(JSON.stringify([resources.map(e => e.definition), templates.map(e => e.definition)])).digest('base64url')
  }

  /** `visible` filters by URI what a session may see. */
  pageResources (cursor: string | undefined, pageSize: number, visible?: (key: string, upstream: string) => boolean): ResourcePage {
    return page(this.resources, cursor, pageSize, visible)
  }

  /** `visible` filters by URI template what a session may see. */
  pageTemplates (cursor: string | undefined, pageSize: number, visible?: (key: string, upstream: string) => boolean): ResourcePage {
    return page(this.templates, cursor, pageSize, visible)
  }

  /** The upstream that serves a URI: a listed resource first, then templates in config order. */
  route (uri: string): string | undefined {
    const listed = this.byUri.get(uri)
    if (listed !== undefined) return listed.upstream
    return this.routes.find(r => r.matcher.test(uri))?.upstream
  }

  /** The upstream that listed this exact URI template (completion of template arguments). */
  routeTemplate (uriTemplate: string): string | undefined {
    return this.byTemplate.get(uriTemplate)?.upstream
  }
}

function page (entries: readonly ResourceEntry[], cursor: string | undefined, pageSize: number, visible?: (key: string, upstream: string) => boolean): ResourcePage {
  let start = 0
  if (cursor !== undefined) {
    const after = decodeCursor(cursor)
    let lo = 0
    let hi = entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((entries[mid] as ResourceEntry).key <= after) lo = mid + 1
      else hi = mid
    }
    start = lo
  }
  if (visible === undefined) {
    const slice = entries.slice(start, start + pageSize)
    const items = slice.map(e => e.definition)
    const last = slice[slice.length - 1]
    return start + pageSize < entries.length && last !== undefined ? { items, nextCursor: encodeCursor(last.key) } : { items }
  }
  const items: UpstreamItem[] = []
  let last: ResourceEntry | undefined
  let i = start
  for (; i < entries.length && items.length < pageSize; i++) {
    const entry = entries[i] as ResourceEntry
    if (!visible(entry.key, entry.upstream)) continue
    items.push(entry.definition)
    last = entry
  }
  const more = last !== undefined && anyFrom(entries, i, e => visible(e.key, e.upstream))
  return more && last !== undefined ? { items, nextCursor: encodeCursor(last.key) } : { items }
}

export function buildResourceCatalog (sources: readonly UpstreamSource[]): ResourceCatalog {
  const ordered = [...sources].filter(s => s.live).sort((a, b) => a.priority - b.priority)
  const resources = new Map<string, ResourceEntry>()
  const templates = new Map<string, ResourceEntry>()
  const routes: TemplateRoute[] = []
  const collisions: ResourceCollision[] = []
  for (const source of ordered) {
    const { config } = source
    const included = createMatcher(config.resources.include)
    const excluded = createMatcher(config.resources.exclude)
    /** Admits an entry unless filtered out or already served by an upstream earlier in config order. */
    const admit = (kind: ResourceCollision['kind'], table: Map<string, ResourceEntry>, key: string, definition: UpstreamItem): boolean => {
      if (!included(key) || excluded(key)) return false
      const served = table.get(key)
      if (served !== undefined) {
        if (served.upstream !== config.name) collisions.push({ kind, key, served: served.upstream, hidden: config.name })
        return false
      }
      table.set(key, { key, upstream: config.name, definition })
      return true
    }
    for (const definition of source.lists.resources) admit('resource', resources, definition.uri as string, definition)
    for (const definition of source.lists.resourceTemplates) {
      const key = definition.uriTemplate as string
      if (!admit('template', templates, key, definition)) continue
      const matcher = templateMatcher(key)
      if (matcher !== undefined) routes.push({ upstream: config.name, matcher, priority: source.priority })
    }
  }
  return new ResourceCatalog([...resources.values()], [...templates.values()], routes, collisions)
}
