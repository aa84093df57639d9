import { z } from 'zod'

// The `admin` block: the operations API (reload, effective config, upstream and session views) on a
// listener of its own, never on the MCP port, behind a bearer token taken from the environment.

export const DEFAULT_ADMIN_HOST = '127.0.0.1'
export const DEFAULT_ADMIN_PORT = 8081
export const MIN_ADMIN_TOKEN_LENGTH = 16

const adminListenSchema = z.strictObject({
  host: z.string().min(1).default(DEFAULT_ADMIN_HOST).describe('loopback by default: only this machine reaches the admin API'),
  port: z.number().int().min(0).max(65535).default(DEFAULT_ADMIN_PORT).describe('must differ from listen.port')
})

/** A console sign-in lasts this long unless the operator signs out first. */
export const DEFAULT_CONSOLE_SESSION_TTL_MS = 8 * 60 * 60_000

const consoleSchema = z.strictObject({
  enabled: z.boolean().default(true).describe('serve the operator console at / on the admin listener (its sign-in takes the admin token)'),
  sessionTtlMs: z.number().int().min(60_000).max(7 * 24 * 60 * 60_000).default(DEFAULT_CONSOLE_SESSION_TTL_MS)
    .describe('how long a console sign-in lasts; the cookie and the server-side session both end then'),
  maxSessions: z.number().int().min(1).max(10_000).default(64)
    .describe('console sign-ins held at once; past it the oldest ends'),
  actAsUnknown: z.boolean().default(false)
    .describe('POST /admin/tools/call (the console\'s Try it) may act as a principal the gateway does not know: a JWT subject with no open session on this replica and no stored upstream grant. false: such a call is refused with 403 unknown_principal; configured API-key principals are always known. Read on each call')
}).describe('the operator console in the browser, served by the admin listener')

export const adminSchema = z.strictObject({
  listen: adminListenSchema.default({ host: DEFAULT_ADMIN_HOST, port: DEFAULT_ADMIN_PORT }).describe('where the admin listener binds, never the MCP port'),
  // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax, shown to the user
  token: z.string().min(MIN_ADMIN_TOKEN_LENGTH, 'must be at least 16 characters (e.g. openssl rand -base64 32); take it from the environment: token: "${SWITCHBOARD_ADMIN_TOKEN}"')
    .describe('every admin request sends Authorization: Bearer <token>; read on each request, so a reload changes it'),
  showQueryParams: z.array(z.string().min(1)).default([])
    .describe('URL query parameters (any case) whose values GET /admin/config shows; every other query value, like any sig= or code=, is [redacted]'),
  allowedHosts: z.array(z.string().min(1)).default([])
    .describe('Host header values (name or name:port) the admin listener answers besides its own address and loopback names: the names it is reached by behind a proxy'),
  allowedOrigins: z.array(z.string().min(1)).default([])
    .describe('browser origins (scheme://host:port) allowed besides the listener\'s own; a request with any other Origin is refused'),
  console: consoleSchema.default({ enabled: true, sessionTtlMs: DEFAULT_CONSOLE_SESSION_TTL_MS, maxSessions: 64, actAsUnknown: false })
}).describe('the admin API: POST /admin/reload, GET /admin/config, /admin/upstreams, /admin/sessions, POST /admin/upstreams/:name/reconnect')

export type AdminConfig = z.output<typeof adminSchema>
