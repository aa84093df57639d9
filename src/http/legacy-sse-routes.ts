import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { MCP_ERROR, RPC, rpcError } from '../protocol/json-rpc.ts'
import { MessageChannel } from '../session/channel.ts'
import type { Dispatcher } from '../session/dispatcher.ts'
import { newSessionId } from '../session/session.ts'
import type { SessionManager } from '../session/session-manager.ts'
import { principalOf, tokenOf } from './auth-routes.ts'
import { endpointOf } from './endpoint-param.ts'
import { SseStream } from './sse-stream.ts'

export interface LegacySseOptions {
  ssePath: string
  messagesPath: string
  dispatcher: Dispatcher
  sessions: SessionManager
  keepAliveMs: number
  /** Whether this request's principal is the one that opened the stream. */
  checkOwner: (channel: MessageChannel, request: FastifyRequest) => boolean
}

/**
 * The deprecated HTTP+SSE transport (protocol 2024-11-05) for older hosts: GET /sse opens the
 * stream and names, in an `endpoint` event, where to POST; every answer comes back on the stream.
 * Registered inside the MCP plugin so the same Origin/Host checks, body limits and parsers apply.
 */
export function legacySseRoutes (app: FastifyInstance, options: LegacySseOptions): void {
  const channels = new Map<string, MessageChannel>()
  // A stream whose client never initialized belongs to no session, so closing the sessions would
  // not end it, and a quiet client would hold the listener's close forever.
  const streams = new Set<SseStream>()
  app.addHook('preClose', (done) => {
    for (const stream of streams) stream.close()
    done()
  })

  const openStream = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const accept = request.headers.accept
    if (accept !== undefined && !accept.includes('text/event-stream') && !accept.includes('*/*')) {
      return await reply.code(406).send(rpcError(null, RPC.TRANSPORT_ERROR, 'Not Acceptable: Accept must include text/event-stream'))
    }
    reply.hijack()
    const id = newSessionId()
    const stream = new SseStream(reply.raw, {}, options.keepAliveMs)
    const channel = new MessageChannel({
      dispatcher: options.dispatcher,
      sessions: options.sessions,
      transport: 'sse',
      principal: principalOf(request),
      token: tokenOf(request),
      endpoint: endpointOf(request),
      send: (message) => { stream.send(message) },
      close: () => { stream.close() },
      isOpen: () => stream.open
    })
    channels.set(id, channel)
    streams.add(stream)
    stream.onClosed = () => {
      streams.delete(stream)
      channels.delete(id)
      channel.close('sse stream closed')
    }
    stream.event('endpoint', `${options.messagesPath}?sessionId=${encodeURIComponent(id)}`)
    return reply
  }
  app.get(options.ssePath, openStream)
  app.get(`${options.ssePath}/:endpoint`, openStream)

  app.post(options.messagesPath, async (request, reply) => {
    const query = request.query as Record<string, unknown>
    const id = typeof query.sessionId === 'string' ? query.sessionId : undefined
    if (id === undefined) return await reply.code(400).send(rpcError(null, RPC.TRANSPORT_ERROR, 'Bad Request: sessionId query parameter is required'))
    const channel = channels.get(id)
    // Another principal's credential is answered like an unknown session.
    if (channel === undefined || !options.checkOwner(channel, request)) return await reply.code(404).send(rpcError(null, MCP_ERROR.SESSION_NOT_FOUND, 'Session not found'))
    channel.receive(request.body, tokenOf(request))
    return await reply.code(202).send('Accepted')
  })
}
