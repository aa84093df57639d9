import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { IncomingToken } from '../auth/incoming-token.ts'
import type { Principal } from '../auth/principal.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { TraceCarrier } from '../observability/tracing.ts'
import { type JsonRpcMessage, type JsonRpcRequest, RPC, isRequest, rpcError } from '../protocol/json-rpc.ts'
import { CallSignal } from '../protocol/cancel-signal.ts'
import { isLimitRefusal } from '../limits/principal-limits.ts'
import { refusalStatus, toHttpForm } from '../protocol/error-forms.ts'
import { MODERN_ERROR, type ModernClaim, type ModernRefusal, checkParamHeaders } from '../protocol/modern.ts'
import { messageBody } from '../protocol/wire.ts'
import { sendBody } from './reply-body.ts'
import { Listen, parseFilter } from '../session/listen.ts'
import { type StatelessDeps, serveStateless } from '../session/stateless.ts'
import { SseStream } from './sse-stream.ts'

const JSON_TYPE = 'application/json; charset=utf-8'

const REFUSAL_REASON: Record<number, string> = {
  [MODERN_ERROR.HEADER_MISMATCH]: 'header_mismatch',
  [MODERN_ERROR.UNSUPPORTED_PROTOCOL_VERSION]: 'protocol_version',
  [RPC.INVALID_PARAMS]: 'envelope'
}

export interface StatelessPost {
  deps: StatelessDeps
  metrics: Metrics
  keepAliveMs: number
}

/** A 2026-07-28 tools/call whose `Mcp-Param-*` headers disagree with the arguments its tool mirrors (SEP-2243). */
export function paramHeaderMismatch (deps: StatelessDeps, message: JsonRpcMessage, headers: IncomingHttpHeaders): ModernRefusal | undefined {
  if (!isRequest(message) || message.method !== 'tools/call' || typeof message.params?.name !== 'string') return undefined
  return checkParamHeaders(message.params.arguments, deps.mirroredParams(message.params.name), headers)
}

/** A 2026-07-28 message refused before it is served: the revision's status, code and data, with its id. */
export function refuseModern (reply: FastifyReply, metrics: Metrics, message: JsonRpcMessage, refusal: ModernRefusal): FastifyReply {
  metrics.httpRejections.inc({ reason: REFUSAL_REASON[refusal.code] ?? 'invalid' })
  const id = 'id' in message && message.id !== undefined ? message.id : null
  return reply.code(refusal.status).header('content-type', JSON_TYPE).send(JSON.stringify(rpcError(id, refusal.code, refusal.message, refusal.data)))
}

/**
 * A POSTed 2026-07-28 message: a request is answered statelessly, as JSON unless something must go
 * before its answer (progress, a log the client asked for), which turns the response into an SSE
 * stream that ends with the answer. No event ids: the era has no resumption. A notification is
 * accepted and needs nothing (cancellation is the client closing the stream).
 */
export async function postStateless (post: StatelessPost, reply: FastifyReply, message: JsonRpcMessage, claim: ModernClaim, principal: Principal, endpoint: string | undefined, trace: TraceCarrier | undefined, token?: IncomingToken): Promise<FastifyReply> {
  if (!isRequest(message)) return reply.code(202).send()
  const request: JsonRpcRequest = message
  if (request.method === 'subscriptions/listen') return await listen(post, reply, request, claim, principal, endpoint)
  let stream: SseStream | undefined
  let answered = false
  // Notifications only: what an upstream asks the client comes back as input_required.
  const related = (m: JsonRpcMessage): void => {
    if (answered || !('method' in m) || 'id' in m) return
    if (m.method === 'notifications/message' && claim.logLevel === undefined) return
    if (stream === undefined) {
      reply.hijack()
      stream = new SseStream(reply.raw, {}, post.keepAliveMs)
    }
    stream.send(m)
  }
  // The client closing its request before the answer cancels the call (the era has no notifications/cancelled over HTTP).
  const gone = new CallSignal()
  reply.raw.once('close', () => { if (!answered) gone.abort(new Error('the client closed its request')) })
  const { status, response } = await serveStateless(post.deps, request, claim, principal, endpoint, related, gone, trace, token)
  answered = true
  if (gone.aborted) return reply
  if (stream === undefined) {
    const retryAfterS = refusalStatus(response)?.retryAfterS
    if (retryAfterS !== undefined) void reply.header('retry-after', String(retryAfterS))
    return sendBody(reply.code(status).header('content-type', JSON_TYPE), messageBody(response ?? rpcError(request.id, RPC.TRANSPORT_ERROR, 'Request cancelled')))
  }
  if (response !== undefined) stream.send(response)
  stream.close()
  return reply
}

/**
 * subscriptions/listen: the response is an SSE stream that stays open, first the acknowledgement of
 * what is honoured, then the notifications asked for, until the client closes it (or, at shutdown,
 * the gateway ends it with the listen request's answer).
 */
async function listen (post: StatelessPost, reply: FastifyReply, request: JsonRpcRequest, claim: ModernClaim, principal: Principal, endpoint: string | undefined): Promise<FastifyReply> {
  const filter = parseFilter(request.params?.notifications)
  if (filter === undefined) {
    return reply.header('content-type', JSON_TYPE).send(JSON.stringify(rpcError(request.id, RPC.INVALID_PARAMS, 'Invalid params: subscriptions/listen needs a notifications filter ({ toolsListChanged?, promptsListChanged?, resourcesListChanged?, resourceSubscriptions? })')))
  }
  const opened = await Listen.open(post.deps, request, filter, claim, principal, endpoint)
  if (isLimitRefusal(opened)) {
    const refused = toHttpForm(opened, request.id)
    return reply.code(refused.status).header('content-type', JSON_TYPE).send(JSON.stringify(refused.response))
  }
  if (opened === undefined) return reply.code(404).header('content-type', JSON_TYPE).send(JSON.stringify(rpcError(request.id, RPC.TRANSPORT_ERROR, 'Endpoint not found')))
  reply.hijack()
  const stream = new SseStream(reply.raw, {}, post.keepAliveMs)
  const held = {
    shutdown: () => {
      stream.send(opened.closingAnswer(post.deps.serverInfo))
      stream.close()
    }
  }
  post.deps.listens.add(held)
  post.deps.metrics.listensActive.set(post.deps.listens.size)
  stream.onClosed = () => {
    post.deps.listens.delete(held)
    post.deps.metrics.listensActive.set(post.deps.listens.size)
    void opened.end()
  }
  opened.attach(stream)
  // The client left while the listen opened: its stream is over already, and so is the listen (and its slot).
  if (reply.raw.destroyed) stream.close()
  return reply
}
