import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { hasBearerToken } from '../auth/bearer-token.ts'
import { redactConfig } from '../config/redact.ts'
import type { AdminService } from '../ops/admin-service.ts'
import type { ReloadResult } from '../ops/reload-result.ts'
import { approvalRoutes } from './approval-routes.ts'
import { pinsRoutes } from './admin-pins-routes.ts'
import type { ConsoleSignIns } from '../ops/console-sign-ins.ts'
import { adminEventsRoute, type AdminEventsOptions } from './admin-events-route.ts'
import { CSRF_REFUSAL, csrfOk, signInOf } from './console-cookie.ts'
import { consoleDataRoutes } from './console-data-routes.ts'
import { holdWrongToken, type AdminThrottleGate } from './admin-throttle-gate.ts'

export type { AdminConnectionsView, AdminService, AdminSessionsView, AdminUpstreamView } from '../ops/admin-service.ts'

export interface AdminRoutesOptions extends AdminService {
  /** The current token (read per request, so a reload can change it). */
  token: () => string
  /** Served as GET /metrics (behind the admin token like everything here); a prom-client Registry fits. */
  metrics?: { contentType: string, metrics: () => Promise<string> }
  /** The console's sign-ins: their cookie is taken instead of the token (with csrf on state changes). */
  signIns?: ConsoleSignIns | undefined
  /** GET /admin/events: its limits and gauge. */
  events?: AdminEventsOptions | undefined
  /** Wrong bearer tokens count here, with POST /admin/login's; absent: no throttle. */
  throttle?: AdminThrottleGate | undefined
}

/** Who may use the admin listener: the token, or a console sign-in when the console is on. */
interface AdminAuth { token: () => string, signIns?: ConsoleSignIns | undefined, throttle?: AdminThrottleGate | undefined }

const CHALLENGE = 'Bearer realm="switchboard-admin"'
/** Admin requests carry small bodies, if any; larger ones are refused. */
const MAX_ADMIN_BODY_BYTES = 16 * 1024

/** Whether `Authorization` carries the admin token (compared in constant time). */
export function adminAuthOk (header: string | undefined, token: string): boolean {
  return hasBearerToken(header, token)
}

/**
 * The admin token check, as an onRequest hook of each context it guards (never of the whole listener).
 * A console sign-in's cookie passes too; then a state-changing method also needs the csrf header.
 */
function bearerHook ({ token, signIns, throttle }: AdminAuth): onRequestAsyncHookHandler {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    void reply.header('cache-control', 'no-store')
    if (adminAuthOk(request.headers.authorization, token())) return
    const signIn = signIns === undefined ? undefined : signInOf(request.headers, signIns)
    if (signIn !== undefined) {
      if (csrfOk(request.method, request.headers, signIn)) return
      return await reply.code(403).send(CSRF_REFUSAL)
    }
    if (request.headers.authorization === undefined) {
      return await reply.code(401).header('www-authenticate', CHALLENGE).send({ error: 'unauthorized', message: 'the admin API needs Authorization: Bearer <admin token>' })
    }
    // The right token passed above whatever the address did: only wrong ones are held back.
    if (await holdWrongToken(throttle, 'bearer', request.ip, reply)) return reply
    return await reply.code(401).header('www-authenticate', CHALLENGE).send({ error: 'unauthorized', message: 'the admin token is not valid' })
  }
}

/** The admin listener's one mapping of a failed request to an HTTP answer. */
async function adminErrorReply (err: { statusCode?: number, message: string }, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const status = typeof err.statusCode === 'number' && err.statusCode >= 400 ? err.statusCode : 500
  if (status >= 500) {
    request.log.error({ err }, 'admin request failed')
    return await reply.code(status).send({ error: 'internal_error', message: 'the admin request failed; see the gateway log' })
  }
  return await reply.code(status).send({ error: 'bad_request', message: err.message })
}

function reloadReply (result: ReloadResult, reply: FastifyReply, preview = false): FastifyReply {
  if (result.outcome === 'invalid') return reply.code(400).send({ outcome: 'invalid', errors: result.errors, message: preview ? 'a reload would be refused; nothing would be applied' : 'nothing was applied' })
  if (result.outcome === 'error') {
    return reply.code(500).send({ outcome: 'error', errors: result.errors, message: 'applying the config failed part way; what was applied stays' })
  }
  const { diff } = result
  const body: Record<string, unknown> = { outcome: preview ? 'preview' : 'ok', ...diff.upstreams, applied: diff.applied, restartRequired: diff.restartRequired }
  if (diff.restartRequired.length > 0) {
    body.message = `${diff.restartRequired.join(', ')} changed but take effect only after a restart; the running values stay`
  }
  if (preview) body.preview = 'nothing was applied: POST /admin/reload applies this'
  return reply.code(200).send(body)
}

/**
 * JSON bodies are parsed (an empty one is no body); any other body is read up to the limit and
 * ignored, so a bare `curl -X POST` and one with `-H content-type:application/json` both work.
 */
function parseBodies (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  const json = app.getDefaultJsonParser('error', 'error')
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_ADMIN_BODY_BYTES }, (request, body, done) => {
    const text = body.toString()
    if (text === '') done(null, undefined)
    else void json(request, text, done)
  })
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_ADMIN_BODY_BYTES }, (_request, _body, done) => { done(null, undefined) })
}

interface AdminApiOptions { service: AdminService, auth: AdminAuth, events?: AdminEventsOptions | undefined }

/** The API under `/admin`: its own bearer hook and body parsing, over the one AdminService. */
async function adminApi (app: FastifyInstance, { service, auth, events }: AdminApiOptions): Promise<void> {
  app.addHook('onRequest', bearerHook(auth))
  parseBodies(app)

  app.post('/reload', async (_request, reply) => reloadReply(await service.reload(), reply))
  // What a reload would change, nothing applied: `applied` names the sections a reload would apply.
  const { previewReload } = service
  if (previewReload !== undefined) app.get('/reload/preview', async (_request, reply) => reloadReply(await previewReload(), reply, true))

  app.get('/config', async () => redactConfig(service.config()))

  app.get('/upstreams', async () => ({ upstreams: service.upstreams() }))

  // With the sessions one by one (the console's), GET /sessions lists them too: consoleDataRoutes.
  if (service.sessionList === undefined) app.get('/sessions', async () => service.sessions())

  // Counts per upstream and type; principal keys only with ?principals=1, never a token.
  app.get<{ Querystring: { principals?: string } }>('/connections', async (request) =>
    await service.connections({ principals: request.query.principals === '1' || request.query.principals === 'true' }))

  app.delete<{ Params: { upstream: string, principal: string } }>('/connections/:upstream/:principal', async (request, reply) => {
    const { upstream, principal } = request.params
    if (!await service.revokeConnection(upstream, principal)) return await reply.code(404).send({ error: 'not_found', message: `principal "${principal}" has no connection at upstream "${upstream}"` })
    return await reply.code(204).send()
  })

  app.post<{ Params: { name: string } }>('/upstreams/:name/reconnect', async (request, reply) => {
    const { name } = request.params
    if (!service.reconnect(name)) return await reply.code(404).send({ error: 'not_found', message: `no upstream named "${name}"` })
    return await reply.code(202).send({ upstream: name, reconnecting: true })
  })

  if (service.approvals !== undefined) await app.register(approvalRoutes, { approvals: service.approvals })
  pinsRoutes(app, service)
  adminEventsRoute(app, service, events)
  await app.register(consoleDataRoutes, { service })
}

interface AdminMetricsOptions { auth: AdminAuth, metrics: NonNullable<AdminRoutesOptions['metrics']> }

/** Prometheus text at `/metrics`, behind the admin token. */
async function adminMetrics (app: FastifyInstance, { auth, metrics }: AdminMetricsOptions): Promise<void> {
  app.addHook('onRequest', bearerHook(auth))
  app.get('/metrics', async (_request, reply) => await reply.header('content-type', metrics.contentType).send(await metrics.metrics()))
}

/**
 * What nothing on the listener answers: a 404 only behind the admin token, so an unauthenticated
 * caller cannot even learn which routes exist. (Fastify reads no body for a 404.)
 */
async function adminNotFound (app: FastifyInstance, { auth }: { auth: AdminAuth }): Promise<void> {
  app.addHook('onRequest', bearerHook(auth))
  app.setNotFoundHandler(async (request, reply) =>
    await reply.code(404).send({ error: 'not_found', message: `no admin route ${request.method} ${request.url.split('?')[0] ?? ''}` }))
}

/**
 * The admin listener: the API under `/admin`, `/metrics`, and the 404 for every other path, each an
 * encapsulated context with its own bearer hook. Register it on the admin listener's own Fastify
 * instance, without a prefix. A sibling plugin registered on that instance (a console at `/`, with
 * its own authentication and Host/Origin checks) gets none of these hooks, parsers or error handler.
 */
export async function adminRoutes (app: FastifyInstance, options: AdminRoutesOptions): Promise<void> {
  const { token, metrics, signIns, events, throttle, ...service } = options
  const auth: AdminAuth = { token, signIns, throttle }
  app.setErrorHandler(adminErrorReply)
  await app.register(adminApi, { prefix: '/admin', service, auth, events })
  if (metrics !== undefined) await app.register(adminMetrics, { auth, metrics })
  await app.register(adminNotFound, { auth })
}
