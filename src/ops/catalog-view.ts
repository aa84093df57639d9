import type { Principal } from '../auth/principal.ts'
import type { CatalogEntry } from '../catalog/catalog.ts'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import type { AccessView } from '../catalog/catalog-view.ts'
import type { ResourceEntry } from '../catalog/resource-catalog.ts'
import type { Endpoints } from '../gateway/endpoints.ts'
import { toolIndexOf } from '../gateway/discovery-tools.ts'
import type { AccessPolicy } from '../policy/access-policy.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import { type PinData, getOwn, pendingFindings, stateOf } from '../trust/pin-book.ts'
import type { AdminCatalogView, CatalogPromptView, CatalogResourceView, CatalogTemplateView, CatalogToolView } from './console-views.ts'

export interface CatalogViewDeps {
  catalogs: CatalogStore
  endpoints: Endpoints
  policy: () => AccessPolicy
  /** The pin book's records; absent when pinning and scanning are both off. */
  pins?: (() => Promise<PinData>) | undefined
}

/** Everything the endpoint selects, no policy applied: what an operator asks for without naming a principal. */
const EVERYTHING: AccessView = { unrestricted: true, allows: () => true }
const NOTHING: AccessView = { unrestricted: false, allows: () => false }

function text (definition: Readonly<Record<string, unknown>>, key: string): string | undefined {
  const value = definition[key]
  return typeof value === 'string' ? value : undefined
}

function toolView (entry: CatalogEntry, pins: PinData | undefined, score?: number): CatalogToolView {
  const d = entry.definition
  const view: CatalogToolView = { name: entry.exposed, upstream: entry.upstream, upstreamName: entry.original, inputSchema: isRecord(d.inputSchema) ? d.inputSchema : { type: 'object' } }
  const title = text(d, 'title')
  const description = text(d, 'description')
  if (title !== undefined) view.title = title
  if (description !== undefined) view.description = description
  if (isRecord(d.annotations)) view.annotations = d.annotations
  // Pins are kept by the upstream's own tool name; tool names are data (`constructor` is one).
  const record = getOwn(getOwn(pins, entry.upstream), entry.original)
  if (record !== undefined) {
    view.pin = stateOf(record)
    const findings = pendingFindings(record.pending)
    if (findings.length > 0) view.findings = findings.map(f => ({ kind: f.rule, detail: `${f.path}: ${f.reason}` }))
  } else if (entry.heldBy !== undefined) {
    view.pin = 'held'
  }
  if (score !== undefined) view.score = score
  return view
}

function promptView (entry: CatalogEntry): CatalogPromptView {
  const d = entry.definition
  const description = text(d, 'description')
  return { name: entry.exposed, upstream: entry.upstream, ...(description === undefined ? {} : { description }), ...(Array.isArray(d.arguments) ? { arguments: d.arguments } : {}) }
}

function resourceView (entry: ResourceEntry): CatalogResourceView {
  const d = entry.definition
  const mimeType = text(d, 'mimeType')
  const description = text(d, 'description')
  return { uri: entry.key, name: text(d, 'name') ?? entry.key, upstream: entry.upstream, ...(mimeType === undefined ? {} : { mimeType }), ...(description === undefined ? {} : { description }) }
}

function templateView (entry: ResourceEntry): CatalogTemplateView {
  const description = text(entry.definition, 'description')
  return { uriTemplate: entry.key, name: text(entry.definition, 'name') ?? entry.key, upstream: entry.upstream, ...(description === undefined ? {} : { description }) }
}

/**
 * The catalog as a client on `endpoint` sees it: as `principal` (its policy view, nothing when it
 * may not open the endpoint), or every item the endpoint selects. A search endpoint shows the tools
 * call_tool reaches. Quarantined tools are listed too (pin state `held` or `changed`), except in a
 * search, which ranks exactly as search_tools does and so finds only served tools. undefined: no
 * such endpoint.
 */
export async function catalogView (deps: CatalogViewDeps, endpoint: string | null, principal: Principal | null, query: string | null): Promise<AdminCatalogView | undefined> {
  const route = endpoint ?? undefined
  const { endpoints, catalogs } = deps
  let view: AccessView
  if (principal === null) {
    const served = endpoints.serve(route, EVERYTHING)
    if (served === undefined) return undefined
    view = served.view
  } else {
    const served = endpoints.serve(route, deps.policy().viewFor(principal))
    if (served === undefined) return undefined
    view = endpoints.admit(route, principal).ok ? served.view : NOTHING
  }
  const pins = deps.pins === undefined ? undefined : await deps.pins()
  const catalog = catalogs.tools
  let tools: CatalogToolView[]
  if (query !== null && query.trim() !== '') {
    const hits = toolIndexOf(catalog).search(query, {
      limit: catalog.entries.length,
      accept: (i) => {
        const entry = catalog.entries[i] as CatalogEntry
        return view.allows('tools', entry.exposed, entry.upstream)
      }
    })
    tools = hits.map(h => toolView(catalog.entries[h.index] as CatalogEntry, pins, h.score))
  } else {
    tools = [...catalog.entries, ...catalog.held]
      .filter(e => view.allows('tools', e.exposed, e.upstream))
      .sort((a, b) => a.exposed < b.exposed ? -1 : a.exposed > b.exposed ? 1 : 0)
      .map(e => toolView(e, pins))
  }
  const { resources } = catalogs
  return {
    endpoint,
    principal: principal?.id ?? null,
    endpoints: endpoints.names,
    tools,
    prompts: catalogs.prompts.entries.filter(e => view.allows('prompts', e.exposed, e.upstream)).map(promptView),
    resources: resources.resources.filter(e => view.allows('resources', e.key, e.upstream)).map(resourceView),
    templates: resources.templates.filter(e => view.allows('resources', e.key, e.upstream)).map(templateView)
  }
}
