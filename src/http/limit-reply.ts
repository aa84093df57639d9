import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import type { Slot } from '../limits/principal-limits.ts'
import { refusalStatus } from '../protocol/error-forms.ts'
import type { JsonRpcResponse } from '../protocol/json-rpc.ts'
import { messageBody } from '../protocol/wire.ts'
import { sendBody } from './reply-body.ts'

// The HTTP side of the caps (limits): how a refusal is answered, and when a stream's slot is free.

const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * A JSON answer to a POST: 200, or for a refusal made here its code's status (a cap's: 429) with
 * Retry-After where waiting helps.
 * Sent as text: a result that carries its own JSON (a shared catalog page) is not serialized again.
 */
export function replyJson (reply: FastifyReply, response: JsonRpcResponse): FastifyReply {
  const refused = refusalStatus(response)
  if (refused !== undefined) {
    void reply.code(refused.status)
    if (refused.retryAfterS !== undefined) void reply.header('retry-after', String(refused.retryAfterS))
  }
  return sendBody(reply.header('content-type', JSON_TYPE), messageBody(response))
}

/** Releases `slot` when the response closes (ended, or the client went away), or now if it already has: 'close' is not emitted twice. */
export function releaseOnClose (raw: ServerResponse, slot: Slot): void {
  if (raw.destroyed) slot.release()
  else raw.once('close', slot.release)
}
