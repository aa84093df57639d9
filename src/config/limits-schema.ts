import { z } from 'zod'

// Caps per principal (and per session), so that one caller cannot hold every session, stream or
// call slot of a replica. Counted per replica; the principal is `anonymous` for every client of a
// gateway without auth, so the defaults leave a single user far below them in normal use.

export const DEFAULT_LIMITS = Object.freeze({
  sessionsPerPrincipal: 100,
  streamsPerSession: 8,
  listenStreamsPerPrincipal: 16,
  inFlightPerPrincipal: 64,
  sessionConnectionsPerPrincipal: 4
})

export const limitsSchema = z.strictObject({
  sessionsPerPrincipal: z.number().int().min(1).default(DEFAULT_LIMITS.sessionsPerPrincipal)
    .describe('open sessions (Streamable HTTP, WebSocket, legacy SSE) of one principal on this replica; initialize past it is refused (HTTP 429, SB_ERR_LIMIT_SESSIONS) until one is deleted or idles out'),
  streamsPerSession: z.number().int().min(1).default(DEFAULT_LIMITS.streamsPerSession)
    .describe('SSE streams open at once for one session: GET streams and POST responses that turned into streams; past it a GET is refused (HTTP 429), and a POST whose answer would need a stream is cancelled and refused (HTTP 429), SB_ERR_LIMIT_STREAMS'),
  listenStreamsPerPrincipal: z.number().int().min(1).default(DEFAULT_LIMITS.listenStreamsPerPrincipal)
    .describe('2026-07-28 subscriptions/listen streams open at once for one principal on this replica (HTTP 429, SB_ERR_LIMIT_LISTEN_STREAMS)'),
  inFlightPerPrincipal: z.number().int().min(1).default(DEFAULT_LIMITS.inFlightPerPrincipal)
    .describe('requests of one principal running at once on this replica, across its sessions and transports (tools/call, prompts/get, resources/read, lists, ...; a 2026-07-28 call waiting for its retry counts); past it a request is refused (HTTP 429 with Retry-After over HTTP, SB_ERR_LIMIT_IN_FLIGHT)'),
  sessionConnectionsPerPrincipal: z.number().int().min(1).default(DEFAULT_LIMITS.sessionConnectionsPerPrincipal)
    .describe('isolation: session — sessions of one principal holding their own connection (stdio: process) to one upstream at once on this replica, within its maxSessionConnections; past it that session\'s requests to the upstream fail at once (SB_ERR_SESSION_LIMIT naming this key). Not applied without auth (every client is "anonymous")')
}).describe('caps per principal, counted on each replica; without auth every client is the one principal "anonymous"')

export type LimitsConfig = z.output<typeof limitsSchema>
