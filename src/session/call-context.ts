import { randomUUID } from 'node:crypto'
import type { IncomingToken } from '../auth/incoming-token.ts'
import type { Actor, Principal } from '../auth/principal.ts'
import type { AccessView } from '../catalog/catalog-view.ts'
import type { CatalogKind } from '../catalog/catalog-store.ts'
import type { TraceSpan } from '../observability/tracing.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import type { SessionRef } from '../upstream/upstream-pool.ts'
import type { JsonRpcMessage } from '../protocol/json-rpc.ts'
import type { RelatedSender } from './session.ts'

/**
 * The session a request comes from, as the call path and forwarding see it (`Session` is one):
 * who it belongs to, the endpoint it was opened on, what it may use there, and how to ask its
 * client something.
 */
export interface CallSession extends SessionRef {
  readonly principal: Principal
  /** Who acts as the principal, when it is not the principal itself (the admin API). */
  readonly actor?: Actor | undefined
  /** The endpoint path segment the session was opened on; undefined for /mcp. */
  readonly endpoint: string | undefined
  /** What the principal may see and use on that endpoint. */
  readonly view: AccessView
  /** The endpoint's part of the catalog, which the view already applies: it tells "outside the endpoint" from "denied". */
  readonly selection?: { selects: (kind: CatalogKind, name: string, upstream?: string) => boolean } | undefined
  /**
   * Sends a request to the session's client (sampling, elicitation, roots) on `via` (a request's
   * stream; in the 2026-07-28 era the input bridge's relay) and resolves with its answer.
   */
  requestClient: (method: string, params: Record<string, unknown> | undefined, via: RelatedSender | undefined, signal: AbortSignal) => Promise<Record<string, unknown>>
  /** Sends on the session's own stream (outside any request); false when none is open. */
  sendUnsolicited?: (message: JsonRpcMessage) => boolean
}

/**
 * One downstream request on its way through the gateway: every method handler, the tools/call
 * chain and forwarding get this and nothing else.
 */
export interface CallContext<S extends CallSession = CallSession> {
  /** Random, one per request: audit lines (and approvals, webhooks) correlate by it. */
  readonly callId: string
  readonly principal: Principal
  readonly session: S
  readonly signal: CancelSignal
  /** Where messages that belong to this request go before its answer (progress, logs, questions to the client). */
  readonly related?: RelatedSender | undefined
  /** The request's span, when tracing is on: upstream requests it causes hang from it. */
  readonly trace?: TraceSpan | undefined
  /** The bearer token the request came with, when the edge hands it on (printed, it is "[redacted]"). */
  readonly token?: IncomingToken | undefined
  /** Set by the connect gate when the caller had to connect their account at the upstream first (audit). */
  connect?: 'required' | undefined
}

/**
 * The context of one request. A class, so every request's context has one shape; the call id is
 * drawn when first read, so a request nobody audits never pays for it.
 */
export class RequestContext<S extends CallSession = CallSession> implements CallContext<S> {
  readonly session: S
  readonly signal: CancelSignal
  readonly related: RelatedSender | undefined
  readonly trace: TraceSpan | undefined
  readonly token: IncomingToken | undefined
  connect: 'required' | undefined = undefined
  #callId: string | undefined

  constructor (session: S, signal: CancelSignal, related?: RelatedSender, trace?: TraceSpan, token?: IncomingToken) {
    this.session = session
    this.signal = signal
    this.related = related
    this.trace = trace
    this.token = token
  }

  get callId (): string {
    this.#callId ??= randomUUID()
    return this.#callId
  }

  get principal (): Principal { return this.session.principal }
}

/**
 * Asks the client of the request's session something (an elicitation, a sampling request) on the
 * request's own stream, as an upstream's question is relayed: works in both eras.
 */
export async function askClient (ctx: CallContext, method: string, params: Record<string, unknown> | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
  return await ctx.session.requestClient(method, params, ctx.related, signal)
}
