import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Metrics } from '../observability/metrics.ts'
import { toHttpForm } from '../protocol/error-forms.ts'
import { rpcError } from '../protocol/json-rpc.ts'

// The MCP routes' refusals (an HTTP status with a JSON-RPC error body, counted) and header reading.

/** A request the MCP routes refuse before it reaches the dispatcher. */
export class HttpRefusal extends Error {
  readonly status: number
  readonly rpcCode: number
  readonly reason: string
  readonly data: unknown
  readonly retryAfterS: number | undefined
  constructor (status: number, rpcCode: number, reason: string, message: string, data?: unknown, retryAfterS?: number) {
    super(message)
    this.status = status
    this.rpcCode = rpcCode
    this.reason = reason
    this.data = data
    this.retryAfterS = retryAfterS
  }

  /** A SwitchboardError's refusal, in its HTTP form (src/protocol/error-forms.ts): named in the body, with a Retry-After when it passes. */
  static of (reason: string, err: unknown): HttpRefusal {
    const { status, retryAfterS, response: { error } } = toHttpForm(err)
    return new HttpRefusal(status, error.code, reason, error.message, error.data, retryAfterS)
  }
}

export function refuse (reply: FastifyReply, metrics: Metrics, r: HttpRefusal): FastifyReply {
  metrics.httpRejections.inc({ reason: r.reason })
  if (r.retryAfterS !== undefined) void reply.header('retry-after', String(r.retryAfterS))
  return reply.code(r.status).header('content-type', 'application/json').send(rpcError(null, r.rpcCode, r.message, r.data))
}

export function accepts (request: FastifyRequest, type: string): boolean {
  const accept = request.headers.accept ?? ''
  return accept.includes(type) || accept.includes('*/*')
}

export function headerValue (request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}
