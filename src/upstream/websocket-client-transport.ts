import WebSocket from 'ws'
import { encodeJson } from '../protocol/encode-json.ts'
import { decodeFrame } from '../protocol/websocket-frame.ts'
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client'

export const MCP_WEBSOCKET_SUBPROTOCOL = 'mcp'

// Bounded so a peer that never answers the closing handshake cannot stall shutdown.
const CLOSE_HANDSHAKE_TIMEOUT_MS = 2_000

export interface WebSocketClientTransportOptions {
  headers?: Record<string, string>
  maxPayloadBytes?: number
  /** Fail start() if the upgrade is not answered in time; unset waits indefinitely. */
  handshakeTimeoutMs?: number
}

/** The server answered the upgrade request with a plain HTTP response instead of 101. */
export class WebSocketUpgradeError extends Error {
  readonly status: number

  constructor (status: number, message: string) {
    super(message)
    this.name = 'WebSocketUpgradeError'
    this.status = status
  }
}

/**
 * MCP client transport over a WebSocket: one JSON-RPC message per text frame,
 * negotiated with the `mcp` subprotocol.
 *
 * `sessionId` is deliberately never set: the SDK Client skips the initialize
 * handshake on transports that already report a session id.
 */
export class WebSocketClientTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: (message: JSONRPCMessage) => void

  readonly #url: URL
  readonly #options: WebSocketClientTransportOptions
  #socket: WebSocket | undefined
  #started = false
  #opened = false
  #closeNotified = false
  #inbox: JSONRPCMessage[] = []
  #draining = false
  #closeAfterDrain = false

  constructor (url: URL, options: WebSocketClientTransportOptions = {}) {
    this.#url = url
    this.#options = options
  }

  start (): Promise<void> {
    if (this.#started) {
      return Promise.reject(new Error('WebSocketClientTransport already started; create a new transport to reconnect'))
    }
    this.#started = true
    const target = redactedUrl(this.#url)

    return new Promise<void>((resolve, reject) => {
      let settled = false
      const fail = (error: Error): void => {
        if (settled) return
        settled = true
        socket.terminate()
        reject(error)
      }

      const socket = new WebSocket(this.#url, MCP_WEBSOCKET_SUBPROTOCOL, {
        headers: this.#options.headers,
        maxPayload: this.#options.maxPayloadBytes,
        handshakeTimeout: this.#options.handshakeTimeoutMs,
        // Redirects could silently carry our credential headers to another origin.
        followRedirects: false
      })
      this.#socket = socket

      socket.on('unexpected-response', (_req, res) => {
        // Drain so the HTTP socket can be released; the body is not needed.
        res.resume()
        const status = res.statusCode ?? 0
        fail(new WebSocketUpgradeError(status, `WebSocket upgrade to ${target} rejected with HTTP ${status}${res.statusMessage ? ` ${res.statusMessage}` : ''}`))
      })

      socket.on('open', () => {
        if (settled) return
        if (socket.protocol !== MCP_WEBSOCKET_SUBPROTOCOL) {
          fail(new Error(`WebSocket server at ${target} did not accept subprotocol '${MCP_WEBSOCKET_SUBPROTOCOL}'`))
          return
        }
        settled = true
        this.#opened = true
        resolve()
      })

      socket.on('error', (error: Error) => {
        if (!settled) {
          fail(new Error(`WebSocket connection to ${target} failed: ${describeError(error)}`, { cause: error }))
          return
        }
        if (this.#opened) this.onerror?.(error)
      })

      socket.on('message', (data, isBinary) => this.#onFrame(data, isBinary))

      socket.on('close', () => {
        // A connection that never opened is reported through start()'s rejection alone.
        if (!this.#opened) return
        if (this.#draining) this.#closeAfterDrain = true
        else this.#notifyClosed()
      })
    })
  }

  async send (message: JSONRPCMessage): Promise<void> {
    const socket = this.#socket
    if (socket === undefined || socket.readyState !== WebSocket.OPEN) {
      throw new Error('WebSocket is not open')
    }
    const text = encodeJson(message)
    await new Promise<void>((resolve, reject) => {
      socket.send(text, { binary: false }, (error) => {
        if (error) reject(error)
        else resolve()
      })
    })
  }

  async close (): Promise<void> {
    const socket = this.#socket
    if (socket !== undefined && socket.readyState !== WebSocket.CLOSED) {
      await closeSocket(socket)
    }
    // The caller asked to stop; undelivered messages have nobody left to handle them.
    this.#inbox = []
    this.#notifyClosed()
  }

  #onFrame (data: WebSocket.RawData, isBinary: boolean): void {
    const decoded = decodeFrame(data, isBinary)
    if ('error' in decoded) {
      this.onerror?.(decoded.error)
      return
    }
    const message = decoded.message
    this.#inbox.push(message as unknown as JSONRPCMessage)
    if (!this.#draining) {
      this.#draining = true
      setImmediate(() => this.#deliverNext())
    }
  }

  // One message per macrotask: the SDK dispatches notifications a microtask
  // later than responses, so frames parsed in the same tick would let a final
  // progress notification arrive after its request already resolved.
  #deliverNext (): void {
    const message = this.#inbox.shift()
    if (message !== undefined && !this.#closeNotified) {
      try {
        this.onmessage?.(message)
      } catch (error) {
        // A throwing handler must not stall delivery of the frames behind it.
        this.onerror?.(error instanceof Error ? error : new Error(String(error)))
      }
    }
    if (this.#inbox.length > 0) {
      setImmediate(() => this.#deliverNext())
      return
    }
    this.#draining = false
    if (this.#closeAfterDrain) this.#notifyClosed()
  }

  #notifyClosed (): void {
    if (this.#closeNotified) return
    this.#closeNotified = true
    this.onclose?.()
  }
}

function closeSocket (socket: WebSocket): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => socket.terminate(), CLOSE_HANDSHAKE_TIMEOUT_MS)
    socket.once('close', () => {
      clearTimeout(timer)
      resolve()
    })
    // Closing while still connecting makes ws emit 'error'; start() already owns that outcome.
    socket.on('error', () => {})
    socket.close(1000)
  })
}

// Query strings and userinfo may carry secrets; keep them out of error messages.
function redactedUrl (url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`
}

function describeError (error: Error): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    const first: unknown = error.errors[0]
    if (first instanceof Error) return first.message
  }
  const code = (error as NodeJS.ErrnoException).code
  if (error.message) return error.message
  return code ?? error.name
}
