import { createHash } from 'node:crypto'
import type { CatalogKind, CatalogStore } from './catalog-store.ts'

/**
 * One principal's view of the catalogs: what it may see and use. The catalog owns this contract;
 * the access policy implements it.
 */
export interface AccessView {
  /** Everything is allowed: lists need no filtering. */
  readonly unrestricted: boolean
  /** `upstream`: where the item comes from, when the caller knows it (a view may select by upstream). */
  allows: (kind: CatalogKind, name: string, upstream?: string) => boolean
}

interface Remembered { source: string, digest: string }

const remembered = new WeakMap<AccessView, Map<CatalogKind, Remembered>>()

/**
 * A digest of what one view of the catalogs shows: a session is told about a change only when
 * what it may see changed. Unrestricted views share the catalog's own digest; others are hashed
 * once per catalog version and view.
 */
export function visibleDigest (catalogs: CatalogStore, kind: CatalogKind, view: AccessView): string {
  const source = catalogs.digest(kind)
  if (view.unrestricted) return source
  let byKind = remembered.get(view)
  if (byKind === undefined) {
    byKind = new Map()
    remembered.set(view, byKind)
  }
  const known = byKind.get(kind)
  if (known?.source === source) return known.digest
  const hash = createHash('sha256')
  if (kind === 'resources') {
    const { resources, templates } = catalogs.resources
    for (const e of resources) if (view.allows('resources', e.key, e.upstream)) hash.update(JSON.stringify(e.definition))
    hash.update('\0templates\0')
    for (const e of templates) if (view.allows('resources', e.key, e.upstream)) hash.update(JSON.stringify(e.definition))
  } else {
    for (const e of catalogs[kind].entries) if (view.allows(kind, e.exposed, e.upstream)) hash.update(JSON.stringify(e.definition))
  }
  const digest = hash.digest('base64url')
  byKind.set(kind, { source, digest })
  return digest
}

/** What a search endpoint lists as tools: always the same two, so its sessions never hear of tool changes. */
export const SEARCH_TOOLS_DIGEST = 'search-tools'

/** The digest of what a session lists of one kind: its view, except tools on a search endpoint. */
export function listedDigest (catalogs: CatalogStore, kind: CatalogKind, view: AccessView, searches: boolean): string {
  return searches && kind === 'tools' ? SEARCH_TOOLS_DIGEST : visibleDigest(catalogs, kind, view)
}
