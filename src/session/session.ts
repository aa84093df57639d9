import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { JsonRpcMessage, RequestId } from '../protocol/json-rpc.ts'

/** Where messages for a client go: an SSE stream, a WebSocket, ... */
export interface MessageSink {
  send: (message: JsonRpcMessage) => void
  close: () => void
}

export interface SessionInit {
  transport: string
  protocolVersion: string
  clientInfo: Record<string, unknown> | undefined
  clientCapabilities: Record<string, unknown>
  catalogDigest: string
  log: Logger
}

export function newSessionId (): string {
  return randomBytes(24).toString('base64url')
}

/** One downstream client: what it negotiated, its requests in flight and its stream for unsolicited messages. */
export class Session {
  readonly id = newSessionId()
  readonly transport: string
  readonly protocolVersion: string
  readonly clientInfo: Record<string, unknown> | undefined
  readonly clientCapabilities: Record<string, unknown>
  readonly log: Logger
  lastActivity = Date.now()
  /** The catalog this client was last told about; a change notification is owed when it differs. */
  seenDigest: string
  listChangedOwed = false
  private standalone?: MessageSink
  private readonly inFlight = new Map<RequestId, Set<AbortController>>()
  private closed = false

  constructor (init: SessionInit) {
    this.transport = init.transport
    this.protocolVersion = init.protocolVersion
    this.clientInfo = init.clientInfo
    this.clientCapabilities = init.clientCapabilities
    this.seenDigest = init.catalogDigest
    this.log = init.log.child({ session: this.id.slice(0, 8) })
  }

  get hasStream (): boolean { return this.standalone !== undefined }
  get inFlightCount (): number {
    let n = 0
    for (const set of this.inFlight.values()) n += set.size
    return n
  }

  touch (): void { this.lastActivity = Date.now() }

  /** A new stream replaces the old one: a reconnecting client must not be refused. */
  attachStream (sink: MessageSink): void {
    this.standalone?.close()
    this.standalone = sink
    if (this.listChangedOwed) this.listChangedOwed = !this.sendUnsolicited({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
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

  beginRequest (id: RequestId): AbortController {
    const controller = new AbortController()
    let set = this.inFlight.get(id)
    if (set === undefined) {
      set = new Set()
      this.inFlight.set(id, set)
    }
    set.add(controller)
    return controller
  }

  endRequest (id: RequestId, controller: AbortController): void {
    const set = this.inFlight.get(id)
    if (set === undefined) return
    set.delete(controller)
    if (set.size === 0) this.inFlight.delete(id)
  }

  /** notifications/cancelled: stops exactly the requests of this session with that id. */
  cancel (id: RequestId, reason: string): boolean {
    const set = this.inFlight.get(id)
    if (set === undefined) return false
    for (const controller of set) controller.abort(new Error(reason))
    return true
  }

  cancelAll (reason: string): void {
    for (const set of this.inFlight.values()) for (const c of set) c.abort(new Error(reason))
  }

  close (): void {
    if (this.closed) return
    this.closed = true
    this.cancelAll('session closed')
    this.standalone?.close()
    this.standalone = undefined
  }
}
