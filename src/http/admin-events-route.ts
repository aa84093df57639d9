import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { AdminService } from '../ops/admin-service.ts'
import { SSE_HEADERS } from './sse-stream.ts'

// GET /admin/events: what the console shows live. A status snapshot at once and every few seconds,
// each finished call as it ends, and keepalive comments so idle proxies keep the stream open.

export const MAX_EVENT_STREAMS = 16
export const STATUS_EVERY_MS = 2_000
export const EVENTS_KEEPALIVE_MS = 15_000
/** Past this much unsent data a slow browser misses call events (the next status catches it up). */
export const MAX_EVENTS_BUFFERED_BYTES = 1024 * 1024

export interface AdminEventsOptions {
  maxStreams?: number
  statusEveryMs?: number
  keepAliveMs?: number
  /** The open-streams gauge (switchboard_console_event_streams). */
  gauge?: { inc: () => void, dec: () => void }
}

type EventsService = Pick<AdminService, 'upstreams' | 'sessions' | 'callStats' | 'approvals' | 'calls'>

function statusOf (service: EventsService): unknown {
  return {
    upstreams: service.upstreams(),
    sessions: service.sessions(),
    stats: service.callStats?.() ?? null,
    pendingApprovals: service.approvals?.list().length ?? 0
  }
}

/** Registers GET /events in the admin API's context (its bearer hook guards it). */
export function adminEventsRoute (app: FastifyInstance, service: EventsService, options: AdminEventsOptions = {}): void {
  const maxStreams = options.maxStreams ?? MAX_EVENT_STREAMS
  const statusEveryMs = options.statusEveryMs ?? STATUS_EVERY_MS
  const keepAliveMs = options.keepAliveMs ?? EVENTS_KEEPALIVE_MS
  const open = new Set<() => void>()

  // Nothing may keep the listener from closing: every stream ends before it does.
  app.addHook('preClose', async () => { for (const end of [...open]) end() })

  // No HEAD twin: it would hold a stream open with nothing to read.
  app.get('/events', { exposeHeadRoute: false }, async (request, reply) => {
    if (open.size >= maxStreams) {
      return await reply.code(429).header('retry-after', '5').send({ error: 'too_many_streams', message: `at most ${maxStreams} event streams are open at once` })
    }
    const raw = reply.raw
    // The headers set so far (the listener's security headers) go out with the stream's own.
    const headers: OutgoingHttpHeaders = { ...(reply.getHeaders() as OutgoingHttpHeaders), ...SSE_HEADERS, 'cache-control': 'no-store' }
    reply.hijack()
    raw.writeHead(200, headers)
    let dropped = 0
    let ended = false
    const write = (chunk: string): void => {
      if (!ended && !raw.destroyed) raw.write(chunk)
    }
    const sendStatus = (): void => {
      // A status is resent every few seconds: one that cannot go now is not queued.
      if (raw.writableLength > MAX_EVENTS_BUFFERED_BYTES) return
      let data: string
      try {
        data = JSON.stringify(statusOf(service))
      } catch (err: unknown) {
        request.log.warn({ err }, 'admin events: the status could not be read')
        return
      }
      write(`event: status\ndata: ${data}\n\n`)
    }
    const unsubscribe = service.calls?.subscribe((event) => {
      if (raw.writableLength > MAX_EVENTS_BUFFERED_BYTES) {
        dropped++
        return
      }
      write(`event: call\ndata: ${JSON.stringify(event)}\n\n`)
    })
    const statusTimer = setInterval(sendStatus, statusEveryMs)
    statusTimer.unref()
    const keepAlive = setInterval(() => { write(': keepalive\n\n') }, keepAliveMs)
    keepAlive.unref()
    const end = (): void => {
      if (ended) return
      ended = true
      clearInterval(statusTimer)
      clearInterval(keepAlive)
      unsubscribe?.()
      open.delete(end)
      options.gauge?.dec()
      if (dropped > 0) request.log.warn({ dropped }, 'admin events: call events dropped for a slow reader')
      if (!raw.writableEnded) raw.end()
    }
    open.add(end)
    options.gauge?.inc()
    raw.on('close', end)
    sendStatus()
    return reply
  })
}
