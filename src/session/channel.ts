import {
  type JsonRpcMessage, RPC, isNotification, isRequest, isResponse, rpcError, validateMessage
} from '../protocol/json-rpc.ts'
import type { IncomingToken } from '../auth/incoming-token.ts'
import type { Principal } from '../auth/principal.ts'
import type { Dispatcher } from './dispatcher.ts'
import type { MessageSink, Session } from './session.ts'
import type { SessionManager } from './session-manager.ts'

export interface ChannelOptions {
  dispatcher: Dispatcher
  sessions: SessionManager
  /** Label for metrics and logs: websocket, sse. */
  transport: string
  /** Authenticated when the connection opened; the session it initializes belongs to it. */
  principal: Principal
  /** Its bearer token when the principal came from a JWT (see tokenOf in http/auth-routes.ts). */
  token?: IncomingToken | undefined
  /** The endpoint path segment the connection was opened on (undefined: the bare path). */
  endpoint?: string | undefined
  /** Writes one message to the client; the connection decides how (a frame, an SSE event). */
  send: (message: JsonRpcMessage) => void
  /** Closes the connection from the gateway's side. */
  close: () => void
  /** Whether the connection is still up (the session idles out only when it is not). */
  isOpen: () => boolean
}

/**
 * A connection that is one session and carries every message both ways: WebSocket, and the
 * legacy HTTP+SSE transport. Answers, progress, logs and requests to the client all go on it.
 */
export class MessageChannel {
  private readonly options: ChannelOptions
  private session?: Session
  private closed = false

  constructor (options: ChannelOptions) {
    this.options = options
  }

  /** The principal that opened the connection (legacy SSE POSTs must come from it too). */
  get principal (): Principal { return this.options.principal }

  /**
   * One message from the client, already parsed from JSON. `token`: the bearer token it came with
   * (a legacy SSE POST authenticates on its own); a WebSocket's messages act with the upgrade's.
   */
  receive (value: unknown, token: IncomingToken | undefined = this.options.token): void {
    if (this.closed) return
    const { dispatcher, send } = this.options
    if (Array.isArray(value)) return send(rpcError(null, RPC.INVALID_REQUEST, 'Invalid Request: JSON-RPC batches are not supported'))
    const message = validateMessage(value)
    if (message === undefined) return send(rpcError(null, RPC.INVALID_REQUEST, 'Invalid Request: not a JSON-RPC 2.0 message'))
    const session = this.session
    if (isRequest(message) && message.method === 'initialize' && session === undefined) {
      const opened = dispatcher.initialize(message, this.options.transport, this.options.principal, false, this.options.endpoint)
      // Refused (limits.sessionsPerPrincipal): the connection stays, and may initialize again later.
      if (opened.session === undefined) return send(opened.response)
      this.session = opened.session
      const { close, isOpen } = this.options
      const sink: MessageSink = { send, close, get open () { return isOpen() } }
      opened.session.attachStream(sink)
      send(opened.response)
      return
    }
    if (session === undefined) {
      if (isRequest(message)) send(rpcError(message.id, RPC.INVALID_REQUEST, 'Invalid Request: the first request must be initialize'))
      return
    }
    session.touch()
    if (isResponse(message)) return dispatcher.handleResponse(session, message)
    if (isNotification(message)) return dispatcher.handleNotification(session, message)
    void dispatcher.handleRequest(session, message, send, undefined, token).then((response) => {
      if (response !== undefined) send(response)
    })
  }

  /** Malformed JSON from the client. */
  parseError (): void {
    this.options.send(rpcError(null, RPC.PARSE_ERROR, 'Parse error: the message is not valid JSON'))
  }

  /** A message refused before it was read (nested too deeply): an error with no id, the channel stays open. */
  refuse (code: number, message: string): void {
    if (!this.closed) this.options.send(rpcError(null, code, message))
  }

  /** The connection ended: the session ends with it. */
  close (reason: string): void {
    if (this.closed) return
    this.closed = true
    if (this.session !== undefined) this.options.sessions.delete(this.session.id, reason)
  }
}
