import type { FastifyInstance, FastifyReply } from 'fastify'
import { ConsoleRefusal } from '../ops/console-call.ts'
import type { AdminService } from '../ops/admin-service.ts'
import type { AdminToolCall } from '../ops/console-views.ts'
import { DEFAULT_SESSION_LIST_LIMIT } from '../ops/session-list.ts'

/** A tool's arguments may be larger than the other admin bodies (16 KB); still bounded. */
export const MAX_TOOL_CALL_BODY_BYTES = 64 * 1024
const MAX_SESSION_LIST_LIMIT = 10_000

async function badRequest (reply: FastifyReply, message: string): Promise<FastifyReply> {
  return await reply.code(400).send({ error: 'bad_request', message })
}

async function refused (err: unknown, reply: FastifyReply): Promise<FastifyReply> {
  if (err instanceof ConsoleRefusal) return await reply.code(err.statusCode).send({ error: err.error, message: err.message })
  throw err
}

function isStrings (value: unknown): value is string[] {
  return Array.isArray(value) && value.every(v => typeof v === 'string')
}

/** The body of POST /admin/tools/call as a call, or what is wrong with it. */
function toolCall (body: unknown): AdminToolCall | string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'expected a JSON body: { "principal": "<id>", "tool": "<name>", "arguments": { ... } }'
  const b = body as Record<string, unknown>
  if (typeof b.principal !== 'string' || b.principal === '') return 'principal must be a principal id (GET /admin/principals lists them)'
  if (typeof b.tool !== 'string' || b.tool === '') return 'tool must be the exposed name of a tool'
  if (b.arguments !== undefined && (b.arguments === null || typeof b.arguments !== 'object' || Array.isArray(b.arguments))) return 'arguments must be an object'
  if (b.roles !== undefined && !isStrings(b.roles)) return 'roles must be an array of strings'
  if (b.endpoint !== undefined && b.endpoint !== null && typeof b.endpoint !== 'string') return 'endpoint must be an endpoint name, or null for /mcp'
  return {
    principal: b.principal,
    tool: b.tool,
    ...(b.arguments === undefined ? {} : { arguments: b.arguments as Record<string, unknown> }),
    ...(b.roles === undefined ? {} : { roles: b.roles as string[] }),
    ...(typeof b.endpoint === 'string' && b.endpoint !== '' ? { endpoint: b.endpoint } : {})
  }
}

function oneString (value: unknown): string | null {
  const first: unknown = Array.isArray(value) ? value[0] : value
  return typeof first === 'string' && first !== '' ? first : null
}

/**
 * What the operator console reads and does, under `/admin` (registered inside the admin API's
 * context, so the same authentication guards it): call statistics, sessions one by one and ending
 * one, the catalog as a client sees it, the principals, and a tools/call as one of them. A route
 * whose AdminService member is absent is not served.
 */
export async function consoleDataRoutes (app: FastifyInstance, { service }: { service: AdminService }): Promise<void> {
  const { callStats, sessionList, endSession, catalog, principals, callTool } = service
  if (callStats !== undefined) app.get('/stats', async () => callStats())

  if (sessionList !== undefined) {
    app.get<{ Querystring: { limit?: string } }>('/sessions', async (request, reply) => {
      const { limit } = request.query
      const n = limit === undefined ? DEFAULT_SESSION_LIST_LIMIT : Number(limit)
      if (!Number.isInteger(n) || n < 0 || n > MAX_SESSION_LIST_LIMIT) return await badRequest(reply, `limit must be a whole number from 0 to ${MAX_SESSION_LIST_LIMIT}`)
      return sessionList(n)
    })
  }

  if (endSession !== undefined) {
    app.delete<{ Params: { ref: string } }>('/sessions/:ref', async (request, reply) => {
      if (!endSession(request.params.ref)) return await reply.code(404).send({ error: 'not_found', message: 'no session with that ref on this replica' })
      return await reply.code(204).send()
    })
  }

  if (catalog !== undefined) {
    app.get<{ Querystring: Record<string, unknown> }>('/catalog', async (request, reply) => {
      const { endpoint, principal, q } = request.query
      try {
        return await catalog({ endpoint: oneString(endpoint), principal: oneString(principal), query: oneString(q) })
      } catch (err: unknown) {
        return await refused(err, reply)
      }
    })
  }

  if (principals !== undefined) app.get('/principals', async () => ({ principals: principals() }))

  if (callTool !== undefined) {
    app.post('/tools/call', { bodyLimit: MAX_TOOL_CALL_BODY_BYTES }, async (request, reply) => {
      const call = toolCall(request.body)
      if (typeof call === 'string') return await badRequest(reply, call)
      // A caller that goes away before the answer cancels the call.
      const gone = new AbortController()
      const onClose = (): void => { if (!reply.raw.writableFinished) gone.abort() }
      reply.raw.once('close', onClose)
      try {
        return await callTool(call, gone.signal)
      } catch (err: unknown) {
        return await refused(err, reply)
      } finally {
        reply.raw.off('close', onClose)
      }
    })
  }
}
