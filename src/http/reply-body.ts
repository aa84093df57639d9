import { Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'
import { bodyBytes, type WireBody } from '../protocol/wire.ts'

/**
 * Sends a message's body as the reply: text as it is; a large relayed answer's pieces as a stream
 * of them with its length, so that no piece is copied into one buffer first.
 */
export function sendBody (reply: FastifyReply, body: WireBody): FastifyReply {
  if (typeof body === 'string') return reply.send(body)
  return reply.header('content-length', String(bodyBytes(body))).send(Readable.from(body, { objectMode: false }))
}
