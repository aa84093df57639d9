import type { Socket } from 'node:net'
import { endThenDestroy } from '../net/end-then-destroy.ts'
import { RPC } from '../protocol/json-rpc.ts'

// What Node's HTTP parser refuses before any route runs (headers over 16 KB, a malformed request
// line, a request that took too long) gets an answer an MCP client can read: a JSON-RPC error, as
// every other refusal of the public listener, instead of Fastify's own `{"error":…}` shape.

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large'
}

/**
 * What a connection that timed out was still waiting for: any byte at all (idle), the rest of a
 * request's headers (headers, http.headersTimeoutMs), or the rest of its body (request, http.requestTimeoutMs).
 */
export type TimeoutKind = 'idle' | 'headers' | 'request'

/** The status and the words for a parser error, by Node's error code. */
export function clientErrorStatus (code: string | undefined): { status: number, message: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'Request Header Fields Too Large: the request\'s headers exceed the size the gateway accepts (16 KB in all)' }
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'Request Timeout: the request was not received in time (http.headersTimeoutMs, http.requestTimeoutMs)' }
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'Payload Too Large: a chunk extension is too long' }
    default:
      return { status: 400, message: 'Bad Request: the request is not valid HTTP' }
  }
}

/** The whole HTTP response for a parser error, closing the connection. */
export function clientErrorResponse (code: string | undefined): string {
  const { status, message } = clientErrorStatus(code)
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: RPC.INVALID_REQUEST, message } })
  return `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Bad Request'}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
}

/**
 * The fields of Node's HTTP server that its own error and timeout handling reads off the socket:
 * the request being parsed (set once its headers are in) and the response under way.
 */
interface HttpSocket extends Socket {
  parser?: { incoming?: { complete?: boolean } | null } | null
  _httpMessage?: { headersSent?: boolean } | null
}

/** A timed-out connection's kind; a request whose headers are in and whose body is not is `request`. */
export function timeoutKind (socket: Socket): TimeoutKind {
  if (socket.bytesRead === 0) return 'idle'
  const incoming = (socket as HttpSocket).parser?.incoming
  return incoming != null && incoming.complete !== true ? 'request' : 'headers'
}

/** As Node's own handler: an answer would corrupt a response whose headers already went out. */
function canAnswer (socket: Socket): boolean {
  return socket.writable && (socket as HttpSocket)._httpMessage?.headersSent !== true
}

export type ClientErrorHandler = (err: Error & { code?: string }, socket: Socket) => void

/**
 * Fastify's `clientErrorHandler`: answer what can still be answered, then drop the connection within
 * a second whatever the client does (see endThenDestroy). Timeouts are reported by kind.
 */
export function createClientErrorHandler (onTimeout: (kind: TimeoutKind) => void): ClientErrorHandler {
  return (err, socket) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') onTimeout(timeoutKind(socket))
    endThenDestroy(socket, err.code === 'ECONNRESET' || !canAnswer(socket) ? undefined : clientErrorResponse(err.code))
  }
}
