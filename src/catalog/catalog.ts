import { createHash } from 'node:crypto'
import type { UpstreamConfig } from '../config/schema.ts'
import type { UpstreamItem, UpstreamLists } from '../upstream/upstream-lists.ts'
import { anyFrom, decodeCursor, encodeCursor } from './cursor.ts'
import { assignNames, createMatcher, type NameAssignment, type NameRequest, type NamingOptions } from './naming.ts'

export interface CatalogEntry {
  readonly exposed: string
  readonly upstream: string
  /** The upstream's own name for it. */
  readonly original: string
  /** The upstream's definition with only `name` replaced: schemas, annotations, icons and _meta untouched. */
  readonly definition: Readonly<Record<string, unknown>>
  /** Tools only: the call timeout. */
  readonly timeoutMs: number
  /** A quarantined tool only: held by pinning (its definition changed or is new) or by the definition scan. */
  readonly heldBy?: HeldBy
}

export type HeldBy = 'pinning' | 'scan'

export interface CatalogPage { items: Array<Readonly<Record<string, unknown>>>, nextCursor?: string }

/** What one upstream contributes to the catalogs. */
export interface UpstreamSource {
  config: UpstreamConfig
  priority: number
  lists: UpstreamLists
  /** false: the upstream is down; its last-known names stay reserved but are not served. */
  live: boolean
  /** Tools (upstream names) quarantined by tool pinning or the definition scan: named and resolvable, but not listed; the value says which held it. */
  held?: ReadonlyMap<string, HeldBy>
}

/** Named things merged under exposed names: tools and prompts. */
export type NamedKind = 'tools' | 'prompts'

/** An immutable, sorted view of every live upstream's tools (or prompts); swapped whole on each change. */
export class Catalog {
  readonly entries: readonly CatalogEntry[]
  readonly renamed: readonly NameAssignment[]
  readonly digest: string
  private readonly byName: ReadonlyMap<string, CatalogEntry>
  private readonly heldByName: ReadonlyMap<string, CatalogEntry>

  constructor (entries: CatalogEntry[], renamed: NameAssignment[], held: CatalogEntry[] = []) {
    entries.sort((a, b) => a.exposed < b.exposed ? -1 : a.exposed > b.exposed ? 1 : 0)
    this.entries = entries
    this.renamed = renamed
    this.byName = new Map(entries.map(e => [e.exposed, e]))
    this.heldByName = new Map(held.map(e => [e.exposed, e]))
    this.digest = createHash('sha256').update(JSON.stringify(entries.map(e => e.definition))).digest('base64url')
  }

  get size (): number { return this.entries.length }

  /** The quarantined tools (the operator's console shows them beside the served ones). */
  get held (): CatalogEntry[] { return [...this.heldByName.values()] }

  resolve (exposed: string): CatalogEntry | undefined {
    return this.byName.get(exposed)
  }

  /** A tool hidden by tool pinning (quarantine): not listed, not callable, but answered with the reason. */
  quarantined (exposed: string): CatalogEntry | undefined {
    return this.heldByName.get(exposed)
  }

  /** One page after the cursor's name; `visible` filters, by exposed name (and upstream), what a session may see. */
  page (cursor: string | undefined, pageSize: number, visible?: (exposed: string, upstream: string) => boolean): CatalogPage {
    const start = cursor === undefined ? 0 : this.firstAfter(decodeCursor(cursor))
    const items: Array<Readonly<Record<string, unknown>>> = []
    let last: CatalogEntry | undefined
    let i = start
    for (; i < this.entries.length && items.length < pageSize; i++) {
      const entry = this.entries[i] as CatalogEntry
      if (visible !== undefined && !visible(entry.exposed, entry.upstream)) continue
      items.push(entry.definition)
      last = entry
    }
    const more = last !== undefined && i < this.entries.length &&
      (visible === undefined || anyFrom(this.entries, i, e => visible(e.exposed, e.upstream)))
    return more && last !== undefined ? { items, nextCursor: encodeCursor(last.exposed) } : { items }
  }

  private firstAfter (name: string): number {
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((this.entries[mid] as CatalogEntry).exposed <= name) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}

/** Tools or prompts of every upstream under exposed names: same naming, collision and filter rules for both. */
export function buildCatalog (upstreams: readonly UpstreamSource[], naming: NamingOptions, kind: NamedKind = 'tools'): Catalog {
  const requests: Array<NameRequest & { source: UpstreamSource, definition: UpstreamItem }> = []
  for (const source of upstreams) {
    const { config } = source
    const filter = config[kind]
    const included = createMatcher(filter.include)
    const excluded = createMatcher(filter.exclude)
    for (const definition of source.lists[kind]) {
      const tool = definition.name as string
      if (!included(tool) || excluded(tool)) continue
      requests.push({
        upstream: config.name,
        tool,
        local: ownValue(filter.rename, tool) ?? tool,
        prefix: config.prefix ?? config.name,
        priority: source.priority,
        source,
        definition
      })
    }
  }
  const assigned = assignNames(requests, naming)
  const entries: CatalogEntry[] = []
  const held: CatalogEntry[] = []
  const renamed: NameAssignment[] = []
  assigned.forEach((a) => {
    const request = a as typeof requests[number] & NameAssignment
    if (!request.source.live) return
    const { config } = request.source
    const heldBy = kind === 'tools' ? request.source.held?.get(a.tool) : undefined
    ;(heldBy !== undefined ? held : entries).push({
      ...(heldBy === undefined ? {} : { heldBy }),
      exposed: a.exposed,
      upstream: a.upstream,
      original: a.tool,
      definition: { ...request.definition, name: a.exposed },
      timeoutMs: (kind === 'tools' ? ownValue(config.tools.timeoutMs, a.tool) : undefined) ?? config.timeoutMs
    })
    if (a.reason !== undefined) renamed.push({ upstream: a.upstream, tool: a.tool, local: a.local, prefix: a.prefix, priority: a.priority, exposed: a.exposed, reason: a.reason })
  })
  return new Catalog(entries, renamed, held)
}

/** Tool names are data: `constructor` or `toString` must not find Object.prototype's members. */
export function ownValue<T> (record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined
}
