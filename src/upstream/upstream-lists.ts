import type { Logger } from 'pino'
import { SwitchboardError } from '../errors.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import type { RpcPeer } from './rpc-peer.ts'

export interface UpstreamTool { name: string, [key: string]: unknown }
export type UpstreamItem = Readonly<Record<string, unknown>>

/** Everything an upstream lists, as it sent it. */
export interface UpstreamLists {
  tools: readonly UpstreamTool[]
  prompts: readonly UpstreamItem[]
  resources: readonly UpstreamItem[]
  resourceTemplates: readonly UpstreamItem[]
}
export type ListKind = keyof UpstreamLists

interface ListSpec { method: string, key: string, capability: string, id: string }
const LIST_SPECS: Record<ListKind, ListSpec> = {
  tools: { method: 'tools/list', key: 'tools', capability: 'tools', id: 'name' },
  prompts: { method: 'prompts/list', key: 'prompts', capability: 'prompts', id: 'name' },
  resources: { method: 'resources/list', key: 'resources', capability: 'resources', id: 'uri' },
  resourceTemplates: { method: 'resources/templates/list', key: 'resourceTemplates', capability: 'resources', id: 'uriTemplate' }
}
export const LIST_KINDS = Object.keys(LIST_SPECS) as ListKind[]
/** The list-change notifications, and what each makes stale. */
export const CHANGED: Readonly<Record<string, readonly ListKind[]>> = {
  'notifications/tools/list_changed': ['tools'],
  'notifications/prompts/list_changed': ['prompts'],
  'notifications/resources/list_changed': ['resources', 'resourceTemplates']
}

export const MAX_LIST_PAGES = 1000

export const EMPTY_LISTS: UpstreamLists = { tools: [], prompts: [], resources: [], resourceTemplates: [] }

/** Lists `kinds` the upstream declared a capability for; the others keep their `previous` value. */
export async function listAll<C> (peer: RpcPeer<C>, capabilities: Record<string, unknown>, kinds: readonly ListKind[], previous: UpstreamLists, timeoutMs: number, log: Logger): Promise<UpstreamLists> {
  const next: Record<ListKind, readonly unknown[]> = { ...previous }
  for (const kind of kinds) {
    const spec = LIST_SPECS[kind]
    next[kind] = capabilities[spec.capability] === undefined ? [] : await listPages(peer, spec, timeoutMs, log)
  }
  return next as unknown as UpstreamLists
}

/** Every page, bounded: a repeated cursor or more than MAX_LIST_PAGES pages stop it; items without an id are skipped. */
async function listPages<C> (peer: RpcPeer<C>, spec: ListSpec, timeoutMs: number, log: Logger): Promise<UpstreamItem[]> {
  const items: UpstreamItem[] = []
  const seen = new Set<string>()
  let cursor: string | undefined
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const result = await peer.request(spec.method, cursor === undefined ? {} : { cursor }, { timeoutMs })
    const listed = result[spec.key]
    if (!Array.isArray(listed)) throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `${spec.method} result has no ${spec.key} array`)
    for (const item of listed) {
      if (isRecord(item) && typeof item[spec.id] === 'string' && item[spec.id] !== '') items.push(item)
      else log.warn({ method: spec.method }, `upstream listed an item without a ${spec.id}; skipped`)
    }
    const next = result.nextCursor
    if (typeof next !== 'string') return items
    if (seen.has(next)) {
      log.warn({ method: spec.method, cursor: next }, 'upstream repeated a list cursor; stopped paging')
      return items
    }
    seen.add(next)
    cursor = next
  }
  log.warn({ method: spec.method, pages: MAX_LIST_PAGES }, 'upstream list exceeded the page limit; stopped paging')
  return items
}
