import type { FastifyInstance } from 'fastify'
import type { AdminService } from '../ops/admin-service.ts'
import { selectionProblem, type PinSelection } from '../trust/pin-approval.ts'

interface ApproveBody { upstream?: unknown, tools?: unknown, tool?: unknown, all?: unknown }

function strings (value: unknown): string[] | undefined {
  if (value === undefined) return undefined
  if (typeof value === 'string') return [value]
  return Array.isArray(value) && value.every(v => typeof v === 'string') ? value : undefined
}

/** The body of POST /admin/pins/approve as a selection, or what is wrong with it. */
function selection (body: ApproveBody | undefined, configured: readonly string[]): PinSelection | string {
  if (body === undefined || body === null || typeof body !== 'object') return 'expected a JSON body: { "upstream": "<name>", "tools": ["<tool>"] } or { "all": true }'
  const upstreams = strings(body.upstream)
  const tools = strings(body.tools ?? body.tool)
  if ((body.upstream !== undefined && upstreams === undefined) || ((body.tools ?? body.tool) !== undefined && tools === undefined)) return 'upstream and tools must be strings'
  if (body.all !== undefined && typeof body.all !== 'boolean') return 'all must be true or false'
  const unknown = (upstreams ?? []).filter(u => !configured.includes(u))
  if (unknown.length > 0) return `no upstream named ${unknown.join(', ')}`
  const chosen: PinSelection = { upstreams, tools, all: body.all === true }
  const problem = selectionProblem(chosen)
  return problem === undefined ? chosen : problem.replace('--all', 'all').replace('--tool <name> (one or more)', 'tools').replace('--tool', 'tools').replace('--upstream <name>', 'upstream')
}

/**
 * GET /admin/pins (`?upstream=<name>`, repeatable) and POST /admin/pins/approve: what
 * `switchboard pins list|approve` do, against the running gateway's pin store, applied at once.
 */
export function pinsRoutes (app: FastifyInstance, service: AdminService): void {
  const { pins, approvePins } = service
  if (pins === undefined || approvePins === undefined) return
  app.get<{ Querystring: { upstream?: string | string[] } }>('/pins', async (request) => {
    const only = request.query.upstream
    return await pins(only === undefined ? undefined : [only].flat())
  })

  app.post<{ Body: ApproveBody | undefined }>('/pins/approve', async (request, reply) => {
    const chosen = selection(request.body, service.config().upstreams.map(u => u.name))
    if (typeof chosen === 'string') return await reply.code(400).send({ error: 'bad_request', message: chosen })
    const outcome = await approvePins(chosen)
    if (outcome === undefined) return await reply.code(409).send({ error: 'no_pins', message: 'pinning and scanning are both off: nothing is pinned or held' })
    if (outcome.problems.length > 0) return await reply.code(409).send({ error: 'nothing_pending', message: outcome.problems.join('; '), ...outcome })
    return await reply.code(200).send(outcome)
  })
}
