import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { Actor, Principal } from '../auth/principal.ts'
import type { CatalogKind } from '../catalog/catalog-store.ts'
import type { AccessView } from '../catalog/catalog-view.ts'
import type { EndpointSelection } from '../catalog/endpoint-selection.ts'
import { type JsonRpcMessage, type JsonRpcResponse, type RequestId, RPC, RpcError } from '../protocol/json-rpc.ts'
import type { LogLevel } from './log-levels.ts'
import { CallSignal } from '../protocol/cancel-signal.ts'

/** Where messages for a client go: an SSE stream, a WebSocket, ... */
export interface MessageSink {
  send: (message: JsonRpcMessage) => void
  close: () => void
  /** false while nobody is connected to it (a resumable stream waiting for its client to come back). */
  readonly open?: boolean
}

/** Sends messages that belong to one request (progress, logs, server requests) on that request's stream. */
export type RelatedSender = (message: JsonRpcMessage) => void

export interface SessionInit {
  transport: string
  protocolVersion: string
  clientInfo: Record<string, unknown> | undefined
  clientCapabilities: Record<string, unknown>
  /** Who opened the session; every later request must come from the same principal. */
  principal: Principal
  /** Set when someone else acts as `principal` (the admin API): its calls are audited as theirs. */
  actor?: Actor | undefined
  /** The endpoint path segment the session was opened on (/mcp/<endpoint>); undefined for /mcp. */
  endpoint?: string
  /** What the principal may see and call, on that endpoint. */
  view: AccessView
  /** The endpoint's selection behind the view; undefined for the full catalog. */
  selection?: EndpointSelection
  digests: Readonly<Record<CatalogKind, string>>
  log: Logger
  /** Given when another replica opened the session; new sessions get a fresh one. */
  id?: string
  /**
   * Set when other replicas serve the session too: requests to the client then carry ids
   * `<replica>.<n>`, so a reply that lands on another replica finds its way back here.
   */
  replica?: string
}

export function newSessionId (): string {
  return randomBytes(24).toString('base64url')
}

interface ClientRequest {
  resolve: (result: Record<string, unknown>) => void
  reject: (err: Error) => void
}

/** One downstream client: what it negotiated, its requests in flight and its stream for unsolicited messages. */
export class Session {
  readonly id: string
  /** This replica's tag when the session is shared with other replicas. */
  readonly replica: string | undefined
  readonly transport: string
  readonly protocolVersion: string
  readonly clientInfo: Record<string, unknown> | undefined
  readonly clientCapabilities: Record<string, unknown>
  readonly principal: Principal
  readonly actor: Actor | undefined
  /** The endpoint path segment it was opened on, for good: its requests must come there. */
  readonly endpoint: string | undefined
  /** What the session's principal may see and call on its endpoint; a reload may replace it. */
  view: AccessView
  /** The endpoint's selection (a reload may replace it); undefined for the full catalog. */
  selection: EndpointSelection | undefined
  readonly log: Logger
  /** Milliseconds since the epoch when this replica opened (or adopted) it. */
  readonly openedAt = Date.now()
  lastActivity = this.openedAt
  /** The catalogs this client was last told about; a change notification is owed when one differs. */
  readonly seen: Record<CatalogKind, string>
  /** Change notifications that found no stream to carry them; sent when one attaches. */
  readonly owed = new Set<CatalogKind>()
  /** Set by logging/setLevel; until then every log message is passed on. */
  logLevel: LogLevel | undefined
  /** Resource subscriptions (URI → upstream), so a replica that adopts the session can take them on. */
  readonly subscribed = new Map<string, string>()
  private standalone?: MessageSink
  /** One controller per request id; a client that reuses an id while it is in flight gets a list. */
  private readonly inFlight = new Map<RequestId, CallSignal | CallSignal[]>()
  private readonly clientRequests = new Map<RequestId, ClientRequest>()
  private nextClientRequestId = 1
  private closed = false

  constructor (init: SessionInit) {
    this.id = init.id ?? newSessionId()
    this.replica = init.replica
    this.transport = init.transport
    this.protocolVersion = init.protocolVersion
    this.clientInfo = init.clientInfo
    this.clientCapabilities = init.clientCapabilities
    this.principal = init.principal
    this.actor = init.actor
    this.endpoint = init.endpoint
    this.view = init.view
    this.selection = init.selection
    this.seen = { ...init.digests }
    this.log = init.log.child({ session: this.id.slice(0, 8) })
  }

  /** Its endpoint finds tools by search: tools/list shows search_tools and call_tool. */
  get searchesTools (): boolean { return this.selection?.searches === true }

  /** A client connected to the standalone stream right now (it keeps the session from idling out). */
  get hasStream (): boolean { return this.standalone !== undefined && this.standalone.open !== false }
  get isClosed (): boolean { return this.closed }
  get inFlightCount (): number {
    let n = 0
    for (const held of this.inFlight.values()) n += Array.isArray(held) ? held.length : 1
    return n
  }

  touch (): void { this.lastActivity = Date.now() }

  /** A new stream replaces the old one: a reconnecting client must not be refused. */
  attachStream (sink: MessageSink): void {
    if (this.standalone !== sink) this.standalone?.close()
    this.standalone = sink
    for (const kind of [...this.owed]) {
      if (this.sendUnsolicited({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed` })) this.owed.delete(kind)
    }
  }

  detachStream (sink: MessageSink): void {
    if (this.standalone === sink) this.standalone = undefined
  }

  /** Sends on the standalone stream; returns false when there is none to carry it. */
  sendUnsolicited (message: JsonRpcMessage): boolean {
    if (this.standalone === undefined || this.closed) return false
    this.standalone.send(message)
    return true
  }

  beginRequest (id: RequestId): CallSignal {
    const controller = new CallSignal()
    const held = this.inFlight.get(id)
    if (held === undefined) this.inFlight.set(id, controller)
    else if (Array.isArray(held)) held.push(controller)
    else this.inFlight.set(id, [held, controller])
    return controller
  }

  endRequest (id: RequestId, controller: CallSignal): void {
    const held = this.inFlight.get(id)
    if (held === controller) {
      this.inFlight.delete(id)
    } else if (Array.isArray(held)) {
      const rest = held.filter(c => c !== controller)
      if (rest.length === 0) this.inFlight.delete(id)
      else this.inFlight.set(id, rest.length === 1 ? rest[0] as CallSignal : rest)
    }
  }

  /** notifications/cancelled: stops exactly the requests of this session with that id. */
  cancel (id: RequestId, reason: string): boolean {
    const held = this.inFlight.get(id)
    if (held === undefined) return false
    for (const controller of Array.isArray(held) ? held : [held]) controller.abort(new Error(reason))
    return true
  }

  cancelAll (reason: string): void {
    for (const held of [...this.inFlight.values()]) for (const c of Array.isArray(held) ? held : [held]) c.abort(new Error(reason))
  }

  /**
   * Sends a request to the client (sampling, elicitation, roots) on `via`, or on the standalone
   * stream, under an id of the gateway's own; resolves with the client's answer. `signal` aborts
   * it (the upstream cancelled it) and tells the client so.
   */
  async requestClient (method: string, params: Record<string, unknown> | undefined, via: RelatedSender | undefined, signal: AbortSignal): Promise<Record<string, unknown>> {
    if (this.closed) throw new RpcError(RPC.INTERNAL_ERROR, 'the client session is closed')
    signal.throwIfAborted()
    const n = this.nextClientRequestId++
    const id: RequestId = this.replica === undefined ? n : `${this.replica}.${n}`
    const message: JsonRpcMessage = params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params }
    return await new Promise((resolve, reject) => {
      const onAbort = (): void => {
        if (!this.clientRequests.delete(id)) return
        const cancelled: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'cancelled by the upstream' } }
        if (via !== undefined) via(cancelled)
        else this.sendUnsolicited(cancelled)
        reject(signal.reason instanceof Error ? signal.reason : new Error('cancelled'))
      }
      this.clientRequests.set(id, {
        resolve: (result) => { signal.removeEventListener('abort', onAbort); resolve(result) },
        reject: (err) => { signal.removeEventListener('abort', onAbort); reject(err) }
      })
      signal.addEventListener('abort', onAbort, { once: true })
      if (via !== undefined) via(message)
      else if (!this.sendUnsolicited(message)) {
        this.clientRequests.delete(id)
        signal.removeEventListener('abort', onAbort)
        reject(new RpcError(RPC.INTERNAL_ERROR, 'the client has no open stream to receive this request'))
      }
    })
  }

  /** The client answered one of our requests; false when no such request is waiting. */
  resolveClientRequest (response: JsonRpcResponse): boolean {
    const id = response.id
    if (id === undefined || id === null) return false
    const pending = this.clientRequests.get(id)
    if (pending === undefined) return false
    this.clientRequests.delete(id)
    if ('result' in response) pending.resolve(response.result)
    else pending.reject(new RpcError(response.error.code, response.error.message, response.error.data))
    return true
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.cancelAll('session closed')
    const err = new RpcError(RPC.INTERNAL_ERROR, 'the client session closed')
    for (const pending of this.clientRequests.values()) pending.reject(err)
    this.clientRequests.clear()
    this.standalone?.close()
    this.standalone = undefined
  }
}
