import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import {
  type JsonRpcMessage, type JsonRpcRequest, MCP_ERROR, RPC, isNotification, isRequest, isResponse, rpcError, validateMessage
} from '../protocol/json-rpc.ts'
import { SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/versions.ts'
import { classifyMessage, isModernVersion } from '../protocol/modern.ts'
import type { StatelessDeps } from '../session/stateless.ts'
import { paramHeaderMismatch, postStateless, refuseModern } from './stateless-post.ts'
import { carrierOf, type TraceCarrier } from '../observability/tracing.ts'
import type { Dispatcher } from '../session/dispatcher.ts'
import type { Session } from '../session/session.ts'
import type { SessionManager } from '../session/session-manager.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { IncomingToken } from '../auth/incoming-token.ts'
import { type Principal, isSamePrincipal } from '../auth/principal.ts'
import type { Admission } from '../gateway/endpoints.ts'
import { type AuthHook, principalOf, tokenOf } from './auth-routes.ts'
import { createPreflightHandler, setCorsHeaders } from './cors.ts'
import { checkEdge, type EdgePolicy } from './edge-guard.ts'
import { endpointOf } from './endpoint-param.ts'
import { type EventStore, parseEventId } from '../session/event-store.ts'
import { legacySseRoutes } from './legacy-sse-routes.ts'
import { ResumableStream } from './resumable-stream.ts'
import { serveResumeHere } from './follow-elsewhere.ts'
import { createResume } from './resume-stream.ts'
import { RecentAnswers } from './recent-answers.ts'
import { requestStreamId, requestStreamOrigin } from '../session/request-stream-id.ts'
import type { RetryRouter } from '../session/retry-router.ts'
import { SseStream } from './sse-stream.ts'
import { isSwitchboardError } from '../errors.ts'
import { INTERNAL_MESSAGE } from '../protocol/error-forms.ts'
import { type PrincipalLimits, isLimitRefusal, limitRpcError } from '../limits/principal-limits.ts'
import { releaseOnClose, replyJson } from './limit-reply.ts'
import { exceedsJsonDepth, tooDeepMessage } from '../protocol/json-depth.ts'
import { serveWebSocket } from './websocket-channel.ts'
import { HttpRefusal, accepts, headerValue, refuse } from './http-refusal.ts'

export interface McpRoutesOptions {
  /** Served as is (the default endpoint or the full catalog) and with a segment, `<path>/<endpoint>`. */
  path: string
  /** The legacy HTTP+SSE transport's two endpoints. */
  legacy: { ssePath: string, messagesPath: string }
  dispatcher: Dispatcher
  sessions: SessionManager
  metrics: Metrics
  edge: EdgePolicy
  keepAliveMs: number
  /** SSE `retry` sent to 2025-11-25 clients in each stream's priming event. */
  retryMs: number
  store: EventStore
  isDraining: () => boolean
  /** Authenticates every request on these routes (a no-op without an auth section). */
  authHook: AuthHook
  /** Whether a principal may use the endpoint at a path segment (undefined: the bare path). */
  endpoints: { admit: (endpoint: string | undefined, principal: Principal) => Admission }
  /** What a 2026-07-28 request, served without a session, needs; undefined: such requests get 400 -32000. */
  stateless?: StatelessDeps
  /** The caps per principal and session: SSE streams per session are counted here. */
  limits: PrincipalLimits
  /** A body nesting deeper than this is refused with 400 -32600 before it is parsed (http.maxJsonDepth). */
  maxJsonDepth: number
  /** This replica's tag: a POST's stream id names it, so a resume anywhere finds the call. */
  replica: string
  /** Follows a resumed POST stream on the replica running its call; undefined with one replica. */
  router: RetryRouter | undefined
}

const SESSION_HEADER = 'mcp-session-id'
const TRANSPORT = 'streamable-http'
// Priming events (SEP-1699) came with 2025-11-25; older clients may choke on an empty data field.
const PRIMING_SINCE = '2025-11-25'
/** Retry-After of the 503 a closing gateway answers: long enough for a restart or a balancer to move on. */
export const DRAINING_RETRY_AFTER_S = 5

/** Streamable HTTP (MCP 2025-11-25 §Transports) on one path: POST messages, GET a stream, DELETE a session. */
export async function mcpRoutes (app: FastifyInstance, options: McpRoutesOptions): Promise<void> {
  const { dispatcher, sessions, metrics, edge } = options
  const stateless = options.stateless === undefined ? undefined : { deps: options.stateless, metrics, keepAliveMs: options.keepAliveMs }

  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    // Counted before parsing, so that nothing recursive downstream meets a value nested deeper.
    if (exceedsJsonDepth(body as string, options.maxJsonDepth)) {
      done(new HttpRefusal(400, RPC.INVALID_REQUEST, 'too_deep', tooDeepMessage(options.maxJsonDepth)), undefined)
      return
    }
    try {
      done(null, JSON.parse(body as string))
    } catch {
      done(new HttpRefusal(400, RPC.PARSE_ERROR, 'parse', 'Parse error: the body is not valid JSON'), undefined)
    }
  })

  app.setErrorHandler((err: Error & { statusCode?: number, code?: string }, request, reply) => {
    if (err instanceof HttpRefusal) return refuse(reply, metrics, err)
    const status = err.statusCode ?? 500
    if (status === 413) return refuse(reply, metrics, new HttpRefusal(413, RPC.INVALID_REQUEST, 'too_large', 'Request body too large'))
    if (status === 415) return refuse(reply, metrics, new HttpRefusal(415, RPC.INVALID_REQUEST, 'media_type', 'Unsupported Media Type: Content-Type must be application/json'))
    if (status < 500) return refuse(reply, metrics, new HttpRefusal(status, RPC.INVALID_REQUEST, 'bad_request', `Bad Request: ${err.message}`))
    request.log.error({ err }, 'unhandled error on /mcp')
    return refuse(reply, metrics, new HttpRefusal(500, RPC.INTERNAL_ERROR, 'internal', INTERNAL_MESSAGE))
  })

  // One callback-style hook rather than four (three of them async): every request passes here, and
  // an async hook costs promises per request. In order: DNS-rebinding guard, CORS headers, the
  // drain, authentication (every request, within a session too: the token travels on each one),
  // the endpoint's admission, then the protocol version header.
  app.addHook('onRequest', (request, reply, done) => {
    const why = checkEdge(request.headers, edge)
    if (why !== undefined) {
      refuse(reply, metrics, new HttpRefusal(403, RPC.TRANSPORT_ERROR, 'origin', `Forbidden: ${why}`))
      return
    }
    // Every answer from here on, refusals included, is readable by the origin the guard accepted.
    setCorsHeaders(reply.raw, request.headers.origin)
    // A preflight is answered even while closing, and without credentials (browsers send none): it
    // holds nothing and only lists methods and headers; the request it announces gets the 503.
    if (request.method === 'OPTIONS') {
      done()
      return
    }
    if (options.isDraining()) {
      void reply.header('retry-after', String(DRAINING_RETRY_AFTER_S))
      refuse(reply, metrics, new HttpRefusal(503, RPC.TRANSPORT_ERROR, 'draining', 'Service Unavailable: the gateway is shutting down; retry (another replica, or this one once restarted)'))
      return
    }
    // A hook that answers does not call done: the auth hook answers a refusal itself.
    options.authHook(request, reply, (err?: Error) => {
      if (err !== undefined && err !== null) {
        done(err)
        return
      }
      // After authentication, so that only a known principal learns which endpoints exist. Checked
      // on every request, not only at session open: a reload may take the role away.
      if (request.routeOptions.url !== options.legacy.messagesPath) {
        const verdict = options.endpoints.admit(endpointOf(request), principalOf(request))
        if (!verdict.ok) {
          refuse(reply, metrics, new HttpRefusal(verdict.status, RPC.TRANSPORT_ERROR, verdict.status === 404 ? 'unknown_endpoint' : 'endpoint_role', verdict.message))
          return
        }
      }
      const version = headerValue(request, 'mcp-protocol-version')
      // With modern clients served, a modern revision is judged with the body it comes with
      // (classifyMessage); within a session, only the session's era is spoken.
      const modernAllowed = stateless !== undefined && headerValue(request, SESSION_HEADER) === undefined
      if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version) && (!modernAllowed || !isModernVersion(version))) {
        refuse(reply, metrics, new HttpRefusal(400, RPC.TRANSPORT_ERROR, 'protocol_version', `Bad Request: unsupported MCP-Protocol-Version ${version} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`))
        return
      }
      done()
    })
  })

  /** The request's session: known here, or (shared store) adopted from another replica on first sight. */
  async function sessionOf (request: FastifyRequest): Promise<Session> {
    const id = headerValue(request, SESSION_HEADER)
    if (id === undefined || id === '') throw new HttpRefusal(400, RPC.TRANSPORT_ERROR, 'no_session', 'Bad Request: Mcp-Session-Id header is required')
    const found = sessions.resolve(id)
    let session: Session | undefined
    try {
      session = found instanceof Promise ? await found : found
    } catch (err: unknown) {
      if (!isSwitchboardError(err, 'SB_ERR_SESSION_STORE_UNAVAILABLE')) throw err
      // Not known here and not readable: it may well exist (held by another replica), so not 404.
      throw HttpRefusal.of('session_store_unavailable', err)
    }
    // A session is served on the endpoint it was opened on only: elsewhere it does not exist.
    if (session === undefined || session.endpoint !== endpointOf(request)) throw new HttpRefusal(404, MCP_ERROR.SESSION_NOT_FOUND, 'unknown_session', 'Session not found')
    if (!isOwner(session.principal, request)) throw new HttpRefusal(404, MCP_ERROR.SESSION_NOT_FOUND, 'unknown_session', 'Session not found')
    return session
  }

  /**
   * A session belongs to the principal that opened it. Another principal's credential is counted,
   * logged and answered (by the caller) with the same 404 as an unknown session, so session ids
   * cannot be probed or borrowed.
   */
  function isOwner (owner: Principal, request: FastifyRequest): boolean {
    const caller = principalOf(request)
    if (isSamePrincipal(owner, caller)) return true
    metrics.authFailures.inc({ reason: 'session_principal' })
    request.log.warn({ principal: caller.id, owner: owner.id }, 'request for a session opened by another principal refused')
    return false
  }

  const paths = [options.path, `${options.path}/:endpoint`]

  app.post(options.path, postMessage)
  app.post(`${options.path}/:endpoint`, postMessage)

  async function postMessage (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    if (!accepts(request, 'application/json') || !accepts(request, 'text/event-stream')) {
      throw new HttpRefusal(406, RPC.TRANSPORT_ERROR, 'accept', 'Not Acceptable: Accept must include application/json and text/event-stream')
    }
    if (Array.isArray(request.body)) throw new HttpRefusal(400, RPC.INVALID_REQUEST, 'batch', 'Invalid Request: JSON-RPC batches are not supported')
    const message = validateMessage(request.body)
    if (message === undefined) throw new HttpRefusal(400, RPC.INVALID_REQUEST, 'invalid', 'Invalid Request: not a JSON-RPC 2.0 message')
    // Both eras on one path: a message that claims 2026-07-28 in its _meta is served without a session.
    const era = stateless === undefined || headerValue(request, SESSION_HEADER) !== undefined ? undefined : classifyMessage(message, request.headers)
    if (era !== undefined && era.era === 'modern' && stateless !== undefined) {
      if ('refusal' in era) return refuseModern(reply, metrics, message, era.refusal)
      const mismatch = paramHeaderMismatch(stateless.deps, message, request.headers)
      if (mismatch !== undefined) return refuseModern(reply, metrics, message, mismatch)
      return await postStateless(stateless, reply, message, era.claim, principalOf(request), endpointOf(request), carrierOf(request.headers), tokenOf(request))
    }

    if (isRequest(message) && message.method === 'initialize') {
      if (headerValue(request, SESSION_HEADER) !== undefined) throw new HttpRefusal(400, RPC.INVALID_REQUEST, 'reinitialize', 'Invalid Request: initialize must not carry a session id')
      const { session, response } = dispatcher.initialize(message, TRANSPORT, principalOf(request), true, endpointOf(request))
      if (session === undefined) return replyJson(reply, response)
      // Stored before the client learns the id: its next request may land on any replica.
      await sessions.share(session)
      return reply.header(SESSION_HEADER, session.id).send(response)
    }
    const session = await sessionOf(request)
    if (isResponse(message)) {
      dispatcher.handleResponse(session, message)
      return reply.code(202).send()
    }
    if (!isRequest(message)) {
      if (isNotification(message)) dispatcher.handleNotification(session, message)
      return reply.code(202).send()
    }
    return answer(reply, session, message, carrierOf(request.headers), tokenOf(request))
  }

  /** Active resumable streams of each session, by stream id. */
  const streams = new WeakMap<Session, Map<string, ResumableStream>>()
  /** The answers of POST streams that ended here lately: a resume gets one the store lost. */
  const recent = new RecentAnswers()

  function openStream (session: Session, connection: SseStream, request?: JsonRpcRequest): ResumableStream {
    const stream = new ResumableStream(session.id, options.store, request === undefined ? undefined : requestStreamId(options.replica, request.id))
    let active = streams.get(session)
    if (active === undefined) {
      active = new Map()
      streams.set(session, active)
    }
    const registry = active
    registry.set(stream.streamId, stream)
    stream.onEnded = () => { registry.delete(stream.streamId) }
    stream.start(connection, session.protocolVersion >= PRIMING_SINCE ? options.retryMs : undefined)
    return stream
  }

  /**
   * JSON unless something must be sent before the answer (progress, a log, a sampling request):
   * then the response turns into an SSE stream on the spot, which is still possible because
   * nothing has been written yet.
   */
  async function answer (reply: FastifyReply, session: Session, message: JsonRpcRequest, trace: TraceCarrier | undefined, token: IncomingToken | undefined): Promise<FastifyReply> {
    let stream: ResumableStream | undefined
    let answered = false
    // A response that must turn into a stream while the session holds limits.streamsPerSession is
    // refused: its request is cancelled and answered 429 once it has stopped.
    let refused: ReturnType<typeof limitRpcError> | undefined
    const related = (m: JsonRpcMessage): void => {
      // Late arrivals after the answer have no stream left to go on.
      if (answered || refused !== undefined) return
      if (stream === undefined) {
        const slot = options.limits.acquire('streamsPerSession', session.id)
        if (isLimitRefusal(slot)) {
          refused = limitRpcError(message.id, slot)
          session.cancel(message.id, 'the session has too many SSE streams open')
          return
        }
        releaseOnClose(reply.raw, slot)
        reply.hijack()
        stream = openStream(session, new SseStream(reply.raw, { [SESSION_HEADER]: session.id }, options.keepAliveMs), message)
      }
      stream.send(m)
    }
    const response = await dispatcher.handleRequest(session, message, related, trace, token)
    answered = true
    if (refused !== undefined) return replyJson(reply, refused)
    // The reply, not `await reply.send()`: a Fastify reply is a thenable, and awaiting it costs a job.
    // Sent as text: a result that carries its own JSON (a shared catalog page) is not serialized again.
    if (stream === undefined) return replyJson(reply, response ?? rpcError(message.id, RPC.TRANSPORT_ERROR, 'Request cancelled'))
    if (response !== undefined) {
      stream.send(response)
      recent.remember(session.id, stream.streamId, stream.lastEventId, response)
    }
    stream.close()
    return reply
  }

  // GET /mcp: an SSE stream, or with an Upgrade header a WebSocket session on the same path.
  for (const url of paths) {
    app.route({
      method: 'GET',
      url,
      wsHandler: (socket, request) => { serveWebSocket(socket, { dispatcher, sessions, principal: principalOf(request), token: tokenOf(request), endpoint: endpointOf(request), keepAliveMs: options.keepAliveMs, maxJsonDepth: options.maxJsonDepth, log: app.log as unknown as Logger }) },
      handler: getStream
    })
  }

  async function getStream (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    if (!accepts(request, 'text/event-stream')) throw new HttpRefusal(406, RPC.TRANSPORT_ERROR, 'accept', 'Not Acceptable: Accept must include text/event-stream')
    const session = await sessionOf(request)
    const lastEventId = headerValue(request, 'last-event-id')
    const resumed = lastEventId === undefined ? undefined : parseEventId(lastEventId)
    // Taken before any await: the stream may end (and leave the registry) while the store answers.
    const live = resumed === undefined ? undefined : streams.get(session)?.get(resumed.streamId)
    const replay = resumed === undefined || lastEventId === undefined ? undefined : await options.store.replayAfter(session.id, resumed.streamId, lastEventId)
    const slot = options.limits.acquire('streamsPerSession', session.id)
    if (isLimitRefusal(slot)) return replyJson(reply, limitRpcError(null, slot))
    releaseOnClose(reply.raw, slot)
    reply.hijack()
    const connection = new SseStream(reply.raw, { [SESSION_HEADER]: session.id }, options.keepAliveMs)
    // A POST's stream is resumed even when the store lost its events: it must end with its answer or an error.
    const origin = resumed === undefined ? undefined : requestStreamOrigin(resumed.streamId)
    if (resumed !== undefined && lastEventId !== undefined && (replay !== undefined || origin !== undefined)) {
      await resume(session, connection, resumed.streamId, lastEventId, replay ?? [], live, origin)
      return reply
    }
    carryStandalone(session, openStream(session, connection))
    return reply
  }

  /** The session's standalone stream is this one, here: other replicas learn so, to take over should this replica die. */
  function carryStandalone (session: Session, stream: ResumableStream): void {
    session.attachStream(stream)
    if (session.replica !== undefined) options.store.standalone?.carry(session.id, stream.streamId)
  }

  const resume = createResume({
    store: options.store,
    recent,
    router: options.router,
    replica: options.replica,
    standaloneHere: (session, connection) => { carryStandalone(session, openStream(session, connection)) }
  })

  // Another replica's client resumed a stream of a call running here: it is followed from here.
  options.router?.serve('resume', serveResumeHere(async (sessionId, principal, streamId, after, connection) => {
    const found = sessions.resolve(sessionId)
    const session = found instanceof Promise ? await found.catch(() => undefined) : found
    if (session === undefined || !isSamePrincipal(session.principal, principal)) return undefined
    const live = streams.get(session)?.get(streamId)
    // Unreadable events (a store that lost them) skip to what the stream sends from now on.
    const replay = await options.store.replayAfter(session.id, streamId, after)
    await resume(session, connection, streamId, after, replay ?? [], live, requestStreamOrigin(streamId))
    return { ended: () => live === undefined || live.isEnded }
  }))

  legacySseRoutes(app, {
    ...options.legacy,
    dispatcher,
    sessions,
    keepAliveMs: options.keepAliveMs,
    checkOwner: (channel, request) => isOwner(channel.principal, request)
  })

  for (const url of paths) {
    app.delete(url, async (request, reply) => {
      const session = await sessionOf(request)
      sessions.delete(session.id, 'deleted by the client')
      return reply.code(200).send()
    })
    app.options(url, createPreflightHandler(['GET', 'POST', 'DELETE']))
    app.route({
      method: ['PUT', 'PATCH'],
      url,
      handler: async (_request, reply) => reply.code(405).header('allow', 'GET, POST, DELETE, OPTIONS').send(rpcError(null, RPC.TRANSPORT_ERROR, 'Method Not Allowed'))
    })
  }
  app.options(options.legacy.ssePath, createPreflightHandler(['GET']))
  app.options(`${options.legacy.ssePath}/:endpoint`, createPreflightHandler(['GET']))
  app.options(options.legacy.messagesPath, createPreflightHandler(['POST']))
}
