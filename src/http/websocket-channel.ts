import type { WebSocket } from 'ws'
import type { Logger } from 'pino'
import type { IncomingToken } from '../auth/incoming-token.ts'
import type { Principal } from '../auth/principal.ts'
import type { Dispatcher } from '../session/dispatcher.ts'
import type { SessionManager } from '../session/session-manager.ts'
import { MessageChannel } from '../session/channel.ts'
import { MAX_UNSENT_BYTES } from './sse-stream.ts'
import { messageBody } from '../protocol/wire.ts'
import { RPC } from '../protocol/json-rpc.ts'
import { exceedsJsonDepth, tooDeepMessage } from '../protocol/json-depth.ts'

export interface WebSocketChannelOptions {
  dispatcher: Dispatcher
  sessions: SessionManager
  /** Authenticated at the upgrade; the socket's session belongs to it. */
  principal: Principal
  /** The upgrade's bearer token when the principal came from a JWT: every request on the socket acts with it. */
  token?: IncomingToken | undefined
  /** The endpoint path segment of the upgrade (undefined: /mcp). */
  endpoint: string | undefined
  keepAliveMs: number
  /** A message nesting deeper than this is answered with -32600 before it is parsed; the socket stays open. */
  maxJsonDepth: number
  log: Logger
}

/**
 * MCP over one WebSocket (subprotocol `mcp`, one JSON-RPC message per text frame, as the SDK's
 * WebSocketClientTransport speaks it). Pings keep it alive and find dead peers; a client that stops
 * reading is disconnected once the unsent data passes a bound.
 */
export function serveWebSocket (socket: WebSocket, options: WebSocketChannelOptions): void {
  const channel = new MessageChannel({
    dispatcher: options.dispatcher,
    sessions: options.sessions,
    transport: 'websocket',
    principal: options.principal,
    token: options.token,
    endpoint: options.endpoint,
    isOpen: () => socket.readyState === socket.OPEN,
    close: () => { socket.close(1000, 'session closed') },
    send: (message) => {
      if (socket.readyState !== socket.OPEN) return
      if (socket.bufferedAmount > MAX_UNSENT_BYTES) {
        options.log.warn({ bufferedBytes: socket.bufferedAmount }, 'websocket client is not reading; disconnecting it')
        socket.terminate()
        return
      }
      const body = messageBody(message)
      if (typeof body === 'string') {
        socket.send(body, { binary: false })
        return
      }
      // A large relayed result: one text message in fragments, the pieces it arrived in, uncopied.
      body.forEach((piece, k) => { socket.send(piece, { binary: false, fin: k === body.length - 1 }) })
    }
  })
  let alive = true
  const keepAlive = setInterval(() => {
    if (!alive) {
      socket.terminate()
      return
    }
    alive = false
    socket.ping()
  }, options.keepAliveMs)
  keepAlive.unref()
  socket.on('pong', () => { alive = true })
  socket.on('message', (data, isBinary) => {
    alive = true
    if (isBinary) {
      socket.close(1003, 'MCP messages are text frames')
      return
    }
    const text = String(data)
    if (exceedsJsonDepth(text, options.maxJsonDepth)) {
      channel.refuse(RPC.INVALID_REQUEST, tooDeepMessage(options.maxJsonDepth))
      return
    }
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      channel.parseError()
      return
    }
    channel.receive(value)
  })
  socket.on('close', () => {
    clearInterval(keepAlive)
    channel.close('websocket closed')
  })
  socket.on('error', (err) => { options.log.debug({ err }, 'websocket error') })
}
