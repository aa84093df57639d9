import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { hasBearerToken } from '../auth/bearer-token.ts'
import { redactConfig } from '../config/redact.ts'
import type { GatewayConfig } from '../config/schema.ts'
import type { ReloadResult } from '../ops/reload-result.ts'

export interface AdminUpstreamView {
  name: string
  state: string
  transport: string
  isolation: string
  tools: number
  inFlight: number
  reconnects: number
  lastError?: string
  circuit: string
  sessionConnections: number
}

export interface AdminSessionsView { total: number, byTransport: Record<string, number>, byPrincipal: Record<string, number> }

export interface AdminRoutesOptions {
  /** The current token (read per request, so a reload can change it). */
  token: () => string
  reload: () => Promise<ReloadResult>
  config: () => GatewayConfig
  upstreams: () => AdminUpstreamView[]
  sessions: () => AdminSessionsView
  /** false: no such upstream. */
  reconnect: (name: string) => boolean
  /** Served as GET /metrics (behind the admin token like everything here); a prom-client Registry fits. */
  metrics?: { contentType: string, metrics: () => Promise<string> }
}

const CHALLENGE = 'Bearer realm="switchboard-admin"'
/** Admin requests carry no meaningful body; a stray one is read up to this and ignored. */
const MAX_ADMIN_BODY_BYTES = 16 * 1024

/** Whether `Authorization` carries the admin token (compared in constant time). */
export function adminAuthOk (header: string | undefined, token: string): boolean {
  return hasBearerToken(header, token)
}

function reloadReply (result: ReloadResult, reply: FastifyReply): FastifyReply {
  if (result.outcome === 'invalid') return reply.code(400).send({ outcome: 'invalid', errors: result.errors, message: 'nothing was applied' })
  if (result.outcome === 'error') {
    return reply.code(500).send({ outcome: 'error', errors: result.errors, message: 'applying the config failed part way; what was applied stays' })
  }
  const { diff } = result
  const body: Record<string, unknown> = { outcome: 'ok', ...diff.upstreams, applied: diff.applied, restartRequired: diff.restartRequired }
  if (diff.restartRequired.length > 0) {
    body.message = `${diff.restartRequired.join(', ')} changed but take effect only after a restart; the running values stay`
  }
  return reply.code(200).send(body)
}

/**
 * The admin API. Register it on the admin listener's own Fastify instance, without a prefix: it
 * answers every path there, unknown ones included, and only after the bearer token checks out, so an
 * unauthenticated caller cannot even learn which routes exist.
 */
export async function adminRoutes (app: FastifyInstance, options: AdminRoutesOptions): Promise<void> {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    void reply.header('cache-control', 'no-store')
    if (adminAuthOk(request.headers.authorization, options.token())) return
    const message = request.headers.authorization === undefined
      ? 'the admin API needs Authorization: Bearer <admin token>'
      : 'the admin token is not valid'
    return reply.code(401).header('www-authenticate', CHALLENGE).send({ error: 'unauthorized', message })
  })

  // Bodies are ignored: accept any (or none, with or without a content-type), so a bare
  // `curl -X POST` and one with `-H content-type:application/json` both work.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_ADMIN_BODY_BYTES }, (_request, _body, done) => { done(null, undefined) })

  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ error: 'not_found', message: `no admin route ${request.method} ${request.url.split('?')[0] ?? ''}` }))

  app.setErrorHandler(async (err: { statusCode?: number, message: string }, request, reply) => {
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 ? err.statusCode : 500
    if (status >= 500) {
      request.log.error({ err }, 'admin request failed')
      return reply.code(status).send({ error: 'internal_error', message: 'the admin request failed; see the gateway log' })
    }
    return reply.code(status).send({ error: 'bad_request', message: err.message })
  })

  app.post('/admin/reload', async (_request, reply) => reloadReply(await options.reload(), reply))

  app.get('/admin/config', async () => redactConfig(options.config()))

  app.get('/admin/upstreams', async () => ({ upstreams: options.upstreams() }))

  app.get('/admin/sessions', async () => options.sessions())

  const { metrics } = options
  if (metrics !== undefined) {
    app.get('/metrics', async (_request, reply) => reply.header('content-type', metrics.contentType).send(await metrics.metrics()))
  }

  app.post<{ Params: { name: string } }>('/admin/upstreams/:name/reconnect', async (request, reply) => {
    const { name } = request.params
    if (!options.reconnect(name)) return reply.code(404).send({ error: 'not_found', message: `no upstream named "${name}"` })
    return reply.code(202).send({ upstream: name, reconnecting: true })
  })
}
