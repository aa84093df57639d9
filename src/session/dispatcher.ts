import type { Logger } from 'pino'
import type { IncomingToken } from '../auth/incoming-token.ts'
import type { Principal } from '../auth/principal.ts'
import { CallCancelledError } from '../errors.ts'
import { type PrincipalLimits, type Slot, isLimitRefusal, limitRpcError, principalKey } from '../limits/principal-limits.ts'
import { RequestContext } from './call-context.ts'
import type { MethodHandler } from './method-handler.ts'
import {
  type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse,
  RPC, RpcError, isRecord, rpcError, rpcResult
} from '../protocol/json-rpc.ts'
import { negotiateVersion } from '../protocol/versions.ts'
import { unexpectedCause } from '../protocol/error-forms.ts'
import { spanAttributes, spanName } from '../observability/mcp-spans.ts'
import { carrierOf, type SpanEnd, type TraceCarrier, type TraceSpan, type Tracing } from '../observability/tracing.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import type { RelatedSender, Session } from './session.ts'
import type { SessionManager } from './session-manager.ts'

export interface DispatcherDeps {
  sessions: SessionManager
  methods: ReadonlyMap<string, MethodHandler>
  pool: UpstreamPool
  serverInfo: { name: string, version: string, title?: string }
  log: Logger
  /** Off unless configured; when on, each request is a span. */
  tracing?: Tracing
  /** Caps requests in flight per principal (limits.inFlightPerPrincipal); none when absent. */
  limits?: PrincipalLimits
}

export type { RelatedSender }

// What the gateway relays. Fixed at initialize although upstreams come and go: every list can change.
const CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { subscribe: true, listChanged: true },
  completions: {},
  logging: {}
}
/** 2025-11-25 adds (experimental) tasks, relayed to the upstream that owns each (src/gateway/task-relay.ts). */
const CAPABILITIES_WITH_TASKS = { ...CAPABILITIES, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }
const FIRST_TASKS_VERSION = '2025-11-25'

/** The server side of MCP for every downstream transport: one place that answers each method. */
export class Dispatcher {
  private readonly deps: DispatcherDeps

  constructor (deps: DispatcherDeps) {
    this.deps = deps
  }

  /**
   * Opens a session for `principal`, who alone may use it from now on, on the endpoint at path segment
   * `endpoint` (undefined: /mcp), which the edge has admitted. `shareable`: other replicas may serve
   * the session (Streamable HTTP); the caller then shares it before answering. No session, and the
   * refusal as the answer, when the principal already holds limits.sessionsPerPrincipal sessions here.
   */
  initialize (request: JsonRpcRequest, transport: string, principal: Principal, shareable = false, endpoint?: string): { session: Session, response: JsonRpcResponse } | { session: undefined, response: JsonRpcResponse } {
    const params = request.params ?? {}
    const protocolVersion = negotiateVersion(params.protocolVersion)
    let session: Session
    try {
      session = this.deps.sessions.create({
        transport,
        protocolVersion,
        clientInfo: isRecord(params.clientInfo) ? params.clientInfo : undefined,
        clientCapabilities: isRecord(params.capabilities) ? params.capabilities : {},
        principal,
        endpoint
      }, shareable)
    } catch (err: unknown) {
      if (isLimitRefusal(err)) return { session: undefined, response: limitRpcError(request.id, err) }
      throw err
    }
    return {
      session,
      response: rpcResult(request.id, { protocolVersion, capabilities: protocolVersion >= FIRST_TASKS_VERSION ? CAPABILITIES_WITH_TASKS : CAPABILITIES, serverInfo: this.deps.serverInfo })
    }
  }

  /**
   * Answers one request of a client; undefined when the client cancelled it and no answer is owed.
   * `related` carries what belongs to this request before its answer (progress, logs, sampling, ...).
   * It holds one of its principal's limits.inFlightPerPrincipal slots while it runs; past that it is
   * refused at once (SB_ERR_LIMIT_IN_FLIGHT). `token`: the bearer token the request came with when
   * its principal came from a JWT (the edge hands it on; see tokenOf), for the call context.
   */
  async handleRequest (session: Session, request: JsonRpcRequest, related?: RelatedSender, traceHeaders?: TraceCarrier, token?: IncomingToken): Promise<JsonRpcResponse | undefined> {
    if (request.method === 'ping') return rpcResult(request.id, {})
    if (request.method === 'initialize') return rpcError(request.id, RPC.INVALID_REQUEST, 'the session is already initialized')
    const slot = this.deps.limits?.acquire('inFlightPerPrincipal', principalKey(session.principal))
    if (isLimitRefusal(slot)) return limitRpcError(request.id, slot)
    return await this.serve(session, request, related, traceHeaders, slot, token)
  }

  /** A request the gateway makes on a client's behalf (a listen's subscriptions): served like a client's, never refused by a cap. */
  async handleInternal (session: Session, request: JsonRpcRequest): Promise<JsonRpcResponse | undefined> {
    return await this.serve(session, request, undefined, undefined, undefined)
  }

  /** Runs the method's handler; `slot` (the request's place under a cap) is released when it ends, however it ends. */
  private async serve (session: Session, request: JsonRpcRequest, related: RelatedSender | undefined, traceHeaders: TraceCarrier | undefined, slot: Slot | undefined, token?: IncomingToken): Promise<JsonRpcResponse | undefined> {
    const handler = this.deps.methods.get(request.method)
    if (handler === undefined) {
      slot?.release()
      return rpcError(request.id, RPC.METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
    const params = request.params ?? {}
    const trace = this.deps.tracing?.enabled === true ? this.startSpan(session, request, params, traceHeaders) : undefined
    const signal = session.beginRequest(request.id)
    try {
      const result = await handler(params, new RequestContext(session, signal, related, trace, token))
      trace?.end(outcomeOf(result))
      return rpcResult(request.id, result)
    } catch (err: unknown) {
      if (err instanceof CallCancelledError) {
        trace?.end({ outcome: 'cancelled' })
        return undefined
      }
      trace?.end({ outcome: 'error', error: err instanceof RpcError ? String(err.code) : 'internal' })
      if (err instanceof RpcError) {
        // A bare -32603 made for an unexpected error (a forwarded prompts/get, resources/read, ...): logged here, once.
        const cause = unexpectedCause(err)
        if (cause !== undefined) session.log.error({ err: cause, method: request.method }, 'request failed')
        return rpcError(request.id, err.code, err.message, err.data)
      }
      session.log.error({ err, method: request.method }, 'request failed')
      return rpcError(request.id, RPC.INTERNAL_ERROR, 'Internal error')
    } finally {
      session.endRequest(request.id, signal)
      slot?.release()
    }
  }

  /** The request's SERVER span, under the client's trace: `_meta` first, then the HTTP header. */
  private startSpan (session: Session, request: JsonRpcRequest, params: Record<string, unknown>, headers: TraceCarrier | undefined): TraceSpan {
    const attributes = { ...spanAttributes(request.method, params), 'jsonrpc.request.id': String(request.id), 'mcp.protocol.version': session.protocolVersion, 'switchboard.transport': session.transport }
    return (this.deps.tracing as Tracing).request(spanName(request.method, params), attributes, carrierOf(params._meta) ?? headers)
  }

  handleNotification (session: Session, notification: JsonRpcNotification): void {
    switch (notification.method) {
      case 'notifications/cancelled': {
        const id = notification.params?.requestId
        if (typeof id === 'string' || typeof id === 'number') {
          const reason = typeof notification.params?.reason === 'string' ? notification.params.reason : 'cancelled by the client'
          this.deps.sessions.cancel(session, id, reason)
        }
        return
      }
      case 'notifications/roots/list_changed':
        // Only a session's own connections were told about its roots.
        for (const connection of this.deps.pool.sessionConnections(session.id)) connection.notify(notification.method)
        break
      default:
        // notifications/initialized and anything else need no action here.
    }
  }

  /** The client answered a request the gateway relayed to it (sampling, elicitation, roots). */
  handleResponse (session: Session, response: JsonRpcResponse): void {
    if (!this.deps.sessions.answer(session, response)) {
      session.log.debug({ id: response.id }, 'response to no pending request ignored')
    }
  }
}

/** A tool result that is an error says so; the gateway's own refusals name their code. */
function outcomeOf (result: Record<string, unknown>): SpanEnd {
  if (result.isError !== true) return { outcome: 'ok' }
  const meta = isRecord(result._meta) ? result._meta['switchboard/error'] : undefined
  const code = isRecord(meta) && typeof meta.code === 'string' ? meta.code : undefined
  return code === undefined ? { outcome: 'tool_error' } : { outcome: 'refused', error: code }
}
