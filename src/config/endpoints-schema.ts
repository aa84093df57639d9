import { z } from 'zod'
import { closestKey } from './config-issues.ts'

// The `endpoints` list: named, curated views of the catalog, each served at /mcp/<name>.

/** A safe path segment, in the same alphabet as upstream names: no escaping, no case games. */
const ENDPOINT_NAME = /^[a-z][a-z0-9-]*$/
export const MAX_ENDPOINT_NAME_LENGTH = 64

const endpointToolsSchema = z.strictObject({
  include: z.array(z.string().min(1)).default(['*']).describe('globs on exposed tool names (files__read_*)'),
  exclude: z.array(z.string().min(1)).default([]).describe('globs on exposed tool names to leave out (wins over include)')
})

/** MCP tool annotations an endpoint may select on; a tool that leaves one out has the spec's default. */
const annotationsSchema = z.strictObject({
  readOnlyHint: z.boolean().optional().describe('true: only tools that say they do not modify anything'),
  destructiveHint: z.boolean().optional().describe('false: only tools that say their changes are not destructive'),
  idempotentHint: z.boolean().optional().describe('true: only tools that say repeating a call is harmless'),
  openWorldHint: z.boolean().optional().describe('false: only tools that say they touch no outside world')
}).describe('only tools whose annotations have these values (a tool without one has the MCP default: readOnlyHint false, destructiveHint true, idempotentHint false, openWorldHint true)')

export const endpointSchema = z.strictObject({
  name: z.string().max(MAX_ENDPOINT_NAME_LENGTH).regex(ENDPOINT_NAME, 'must be a path segment matching ^[a-z][a-z0-9-]*$').describe('served at /mcp/<name> (and /sse/<name>)'),
  description: z.string().optional().describe('for people; not served'),
  tools: endpointToolsSchema.default({ include: ['*'], exclude: [] }).describe('which tools of the catalog the endpoint serves, by exposed name'),
  upstreams: z.array(z.string().min(1)).min(1).optional().describe('only these upstreams\' tools, prompts and resources (default: every upstream)'),
  annotations: annotationsSchema.optional(),
  roles: z.array(z.string().min(1)).min(1).optional().describe('only principals with one of these roles may open it (needs auth); default: everyone'),
  discovery: z.enum(['list', 'search']).default('list').describe('list: tools/list shows the selection; search: it shows search_tools and call_tool, which find and call the selection'),
  default: z.boolean().default(false).describe('also serve this endpoint at /mcp instead of the full catalog')
})

export type EndpointConfig = z.output<typeof endpointSchema>
export type EndpointAnnotations = NonNullable<EndpointConfig['annotations']>

type IssueSink = (path: PropertyKey[], message: string) => void

interface RawConfig { endpoints?: unknown, upstreams?: unknown, auth?: unknown }

function namesOf (list: unknown): string[] {
  if (!Array.isArray(list)) return []
  return list.flatMap(u => typeof u === 'object' && u !== null && typeof (u as { name?: unknown }).name === 'string' ? [(u as { name: string }).name] : [])
}

/**
 * What the endpoint schema cannot see alone: names unique, upstreams that exist (with the one
 * probably meant), roles only where someone can have a role, at most one default.
 */
export function checkEndpoints (config: RawConfig, issue: IssueSink): void {
  if (!Array.isArray(config.endpoints)) return
  const upstreams = namesOf(config.upstreams)
  const seen = new Map<string, number>()
  let defaultAt: number | undefined
  config.endpoints.forEach((e: unknown, i) => {
    if (typeof e !== 'object' || e === null) return
    const endpoint = e as { name?: unknown, upstreams?: unknown, roles?: unknown, default?: unknown }
    if (typeof endpoint.name === 'string') {
      const first = seen.get(endpoint.name)
      if (first !== undefined) issue(['endpoints', i, 'name'], `duplicate endpoint name "${endpoint.name}" (also endpoints[${first}])`)
      else seen.set(endpoint.name, i)
    }
    if (Array.isArray(endpoint.upstreams)) {
      endpoint.upstreams.forEach((u: unknown, j) => {
        if (typeof u !== 'string' || upstreams.includes(u)) return
        const meant = closestKey(u, upstreams)
        issue(['endpoints', i, 'upstreams', j], `no upstream named "${u}"${meant === undefined ? '' : ` (did you mean "${meant}"?)`}; upstreams: ${upstreams.length === 0 ? 'none' : upstreams.join(', ')}`)
      })
    }
    if (endpoint.roles !== undefined && config.auth === undefined) {
      issue(['endpoints', i, 'roles'], 'needs an auth section: without one every caller is "anonymous" with no roles, so nobody could open this endpoint')
    }
    if (endpoint.default === true) {
      if (defaultAt !== undefined) issue(['endpoints', i, 'default'], `only one endpoint may be the default (also endpoints[${defaultAt}])`)
      else defaultAt = i
    }
  })
}
