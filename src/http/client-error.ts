import type { Socket } from 'node:net'
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

/** Fastify's `clientErrorHandler`: answer what can still be answered, then close the socket. */
export function handleClientError (err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy()
    return
  }
  socket.end(clientErrorResponse(err.code))
}
