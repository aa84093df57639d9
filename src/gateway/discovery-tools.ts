import type { Catalog, CatalogEntry } from '../catalog/catalog.ts'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import { ToolIndex } from '../catalog/tool-search.ts'
import type { Metrics } from '../observability/metrics.ts'
import { RPC, RpcError, isRecord } from '../protocol/json-rpc.ts'
import type { MethodContext } from '../session/method-handler.ts'
import type { CallPath, CallToolResult } from './call-tool.ts'

// The two tools a `discovery: search` endpoint lists instead of its selection: one finds tools,
// the other calls one. call_tool is a tools/call by another name: same path, same checks, same result.

export const SEARCH_TOOLS = 'search_tools'
export const CALL_TOOL = 'call_tool'
export const DEFAULT_SEARCH_LIMIT = 10
export const MAX_SEARCH_LIMIT = 50

const FOUND_TOOL_SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', description: 'the name to pass to call_tool' },
    title: { type: 'string' },
    description: { type: 'string' },
    inputSchema: { type: 'object', description: 'what call_tool\'s arguments must look like for this tool' }
  },
  required: ['name', 'inputSchema']
}

export const DISCOVERY_TOOLS: ReadonlyArray<Readonly<Record<string, unknown>>> = [
  {
    name: SEARCH_TOOLS,
    title: 'Search tools',
    description: 'Finds the tools of this endpoint that fit a task, best match first, by words in their names and descriptions. Returns each tool\'s name, description and input schema; call one with call_tool.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'what you want to do, in a few words (e.g. "read a file", "create issue")' },
        limit: { type: 'integer', minimum: 1, maximum: MAX_SEARCH_LIMIT, default: DEFAULT_SEARCH_LIMIT, description: 'at most this many tools' },
        upstream: { type: 'string', description: 'only tools of this upstream server' }
      },
      required: ['query']
    },
    outputSchema: {
      type: 'object',
      properties: { tools: { type: 'array', items: FOUND_TOOL_SCHEMA } },
      required: ['tools']
    },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }
  },
  {
    name: CALL_TOOL,
    title: 'Call a tool',
    description: 'Calls a tool found with search_tools, by its name, with arguments that follow its input schema. Returns exactly what the tool returns.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', description: 'the tool\'s name as search_tools gave it' },
        arguments: { type: 'object', description: 'the tool\'s arguments', additionalProperties: true }
      },
      required: ['name']
    }
  }
]

export interface DiscoveryDeps {
  catalogs: CatalogStore
  callTool: CallPath['call']
  metrics: Pick<Metrics, 'toolSearches'>
}

/** One index per catalog version: built on the first search after a change, shared by every endpoint and session. */
const indexes = new WeakMap<Catalog, ToolIndex>()

/** The search index of a catalog version: what search_tools ranks with (the admin catalog view ranks with it too). */
export function toolIndexOf (catalog: Catalog): ToolIndex {
  let index = indexes.get(catalog)
  if (index === undefined) {
    index = new ToolIndex(catalog.entries.map(e => ({ name: e.exposed, text: `${textOf(e, 'title')} ${textOf(e, 'description')}` })))
    indexes.set(catalog, index)
  }
  return index
}

function textOf (entry: CatalogEntry, key: string): string {
  const value = entry.definition[key]
  return typeof value === 'string' ? value : ''
}

function invalid (message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true }
}

function found (entry: CatalogEntry): Record<string, unknown> {
  const d = entry.definition
  return {
    name: entry.exposed,
    ...(typeof d.title === 'string' ? { title: d.title } : {}),
    ...(typeof d.description === 'string' ? { description: d.description } : {}),
    inputSchema: isRecord(d.inputSchema) ? d.inputSchema : { type: 'object' }
  }
}

/**
 * search_tools and call_tool for the sessions of search endpoints. Results come from the session's
 * own view (endpoint selection and policy), so a search never names a tool the session could not call.
 */
export function createDiscoveryTools (deps: DiscoveryDeps) {
  function search (args: Record<string, unknown>, ctx: MethodContext): CallToolResult {
    const { query, limit = DEFAULT_SEARCH_LIMIT, upstream } = args
    if (typeof query !== 'string' || query.trim() === '') return invalid('search_tools needs a query: a few words saying what the tool should do')
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEARCH_LIMIT) return invalid(`search_tools: limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}`)
    if (upstream !== undefined && typeof upstream !== 'string') return invalid('search_tools: upstream must be a string')
    deps.metrics.toolSearches.inc({ endpoint: ctx.session.endpoint ?? '' })
    const catalog = deps.catalogs.tools
    const { view } = ctx.session
    const hits = toolIndexOf(catalog).search(query, {
      limit,
      accept: (i) => {
        const entry = catalog.entries[i] as CatalogEntry
        return (upstream === undefined || entry.upstream === upstream) && view.allows('tools', entry.exposed, entry.upstream)
      }
    })
    const structured = { tools: hits.map(h => found(catalog.entries[h.index] as CatalogEntry)) }
    return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }
  }

  return {
    /** tools/call on a search endpoint: search_tools, call_tool, or undefined for any other name. */
    async call (params: Record<string, unknown>, ctx: MethodContext): Promise<CallToolResult | undefined> {
      const args = params.arguments ?? {}
      if (params.name !== SEARCH_TOOLS && params.name !== CALL_TOOL) return undefined
      if (!isRecord(args)) throw new RpcError(RPC.INVALID_PARAMS, 'tools/call needs a string name and an object of arguments')
      if (params.name === SEARCH_TOOLS) return search(args, ctx)
      if (typeof args.name !== 'string') return invalid('call_tool needs the name of a tool (from search_tools) and its arguments')
      // The client's _meta (its progress token) goes with the call, so progress reaches it as for a direct call.
      const inner = { ...(params._meta === undefined ? {} : { _meta: params._meta }), name: args.name, ...(args.arguments === undefined ? {} : { arguments: args.arguments }) }
      return await deps.callTool(inner, ctx)
    }
  }
}
