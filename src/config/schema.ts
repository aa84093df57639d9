import { z } from 'zod'
import { isLoopbackHost } from '../net/loopback.ts'
import { DEFAULT_MAX_JSON_DEPTH } from '../protocol/json-depth.ts'
import { adminSchema } from './admin-schema.ts'
import { metricsSchema } from './metrics-schema.ts'
import { checkEndpoints, endpointSchema } from './endpoints-schema.ts'
import { DEFAULT_AUDIT_REDACT, DEFAULT_AUDIT_REDACT_PATTERNS, auditSchema, authSchema, concurrencySchema, policiesSchema, rateLimitsSchema } from './access-schema.ts'
import { PINNING_DEFAULTS, pinningSchema } from './pinning-schema.ts'
import { redisSchema, sessionsSchema } from './redis-schema.ts'
import { TRACING_DEFAULTS, tracingSchema } from './tracing-schema.ts'
import { LOGGING_DEFAULTS, loggingSchema } from './logging-schema.ts'
import { DEFAULT_CIRCUIT_BREAKER, DEFAULT_RETRIES, circuitBreakerSchema, retriesSchema } from './resilience-schema.ts'
import { DEFAULT_LIMITS, limitsSchema } from './limits-schema.ts'
import { tokensSchema, upstreamAuthSchema } from './upstream-auth-schema.ts'
import { idleStopMsSchema, misplacedProcessKeys, processLimitsSchema, startSchema, upstreamDefaultsSchema } from './process-schema.ts'
import { GUARDRAILS_DEFAULTS, SCANNING_DEFAULTS, guardrailsSchema, scanningSchema } from './guardrails-schema.ts'

// The one source of the config's TypeScript type, its validation and the JSON Schema for editors.

export const DEFAULT_LISTEN_HOST = '127.0.0.1'
export const DEFAULT_LISTEN_PORT = 8080
export const DEFAULT_CALL_TIMEOUT_MS = 30_000
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
export const DEFAULT_HEALTH_CHECK_MS = 30_000
export const DEFAULT_PAGE_SIZE = 500
export const DEFAULT_MAX_NAME_LENGTH = 64
export const DEFAULT_SEPARATOR = '__'

const UPSTREAM_NAME = /^[a-z][a-z0-9-]*$/
const PREFIX = /^(|[A-Za-z][A-Za-z0-9_-]*)$/
const SEPARATOR = /^[A-Za-z0-9_-]{1,4}$/

const positiveMs = z.number().int().positive()
const DEFAULT_HEADERS_TIMEOUT_MS = 10_000
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
const stringMap = z.record(z.string(), z.string())

const toolsSchema = z.strictObject({
  include: z.array(z.string().min(1)).default(['*']).describe('globs on the upstream\'s own tool names'),
  exclude: z.array(z.string().min(1)).default([]).describe('globs on the upstream\'s own tool names to leave out (wins over include)'),
  rename: z.record(z.string(), z.string().min(1)).default({}).describe('upstream tool name → exposed tool name (before the prefix)'),
  timeoutMs: z.record(z.string(), positiveMs).default({}).describe('per-tool call timeout overrides, by upstream tool name')
})

const promptsSchema = z.strictObject({
  include: z.array(z.string().min(1)).default(['*']).describe('globs on the upstream\'s own prompt names'),
  exclude: z.array(z.string().min(1)).default([]).describe('globs on the upstream\'s own prompt names to leave out (wins over include)'),
  rename: z.record(z.string(), z.string().min(1)).default({}).describe('upstream prompt name → exposed prompt name (before the prefix)')
})

const resourcesSchema = z.strictObject({
  include: z.array(z.string().min(1)).default(['*']).describe('globs on resource URIs and URI templates'),
  exclude: z.array(z.string().min(1)).default([]).describe('globs on resource URIs and URI templates to leave out (wins over include)')
})

const upstreamSchema = z.strictObject({
  name: z.string().regex(UPSTREAM_NAME, 'must match ^[a-z][a-z0-9-]*$').describe('unique; the default prefix of its tools and prompts, and its label in logs and metrics'),
  transport: z.enum(['stdio', 'streamable-http', 'sse', 'websocket']).describe('stdio: a child process the gateway starts; streamable-http, sse (legacy HTTP+SSE), websocket (ws:// or wss://, subprotocol mcp): a server at url'),
  command: z.string().min(1).optional().describe('stdio: the program to start (required for stdio, refused for the others)'),
  args: z.array(z.string()).default([]).describe('stdio: its arguments'),
  env: stringMap.default({}).describe('stdio: its environment is PATH, HOME and a few locale variables plus exactly these; values are treated as secrets'),
  cwd: z.string().min(1).optional().describe('stdio: its working directory (default: the gateway\'s)'),
  url: z.string().optional().describe('streamable-http, sse: an http(s) URL; websocket: a ws(s) URL (required for these, refused for stdio); redirects are not followed'),
  headers: stringMap.default({}).describe('the upstream\'s own credentials; the client\'s are never forwarded'),
  auth: upstreamAuthSchema.optional(),
  timeoutMs: positiveMs.default(DEFAULT_CALL_TIMEOUT_MS).describe('per-call timeout; the upstream request is cancelled when it passes'),
  connectTimeoutMs: positiveMs.default(DEFAULT_CONNECT_TIMEOUT_MS).describe('connect, initialize and the first tools/list must finish within this'),
  healthCheckMs: positiveMs.default(DEFAULT_HEALTH_CHECK_MS).describe('each connection to it is probed this often (ping, or server/discover); one that fails the probe reconnects, a caller\'s connection whose credential is gone closes'),
  prefix: z.string().regex(PREFIX, 'must be "" or match ^[A-Za-z][A-Za-z0-9_-]*$').optional().describe('exposed names are <prefix><separator><name> (default: the upstream\'s name); "" exposes its names unprefixed'),
  protocol: z.enum(['auto', '2025-11-25', '2026-07-28']).default('auto')
    .describe('the MCP revision to speak to it. auto: streamable-http upstreams are asked server/discover first and spoken to in 2026-07-28 when they offer it, else initialize (2025-11-25 or older); other transports always initialize'),
  isolation: z.enum(['shared', 'session', 'principal']).default('shared')
    .describe('shared: one connection serves every client; session: each downstream session gets its own connection (stateful servers, server-to-client requests outside calls); principal: each caller (principal) gets its own connection, shared by their sessions (the default with per-user auth: oauth, token_exchange)'),
  maxSessionConnections: z.number().int().min(1).default(64).describe('isolation: session — at most this many sessions hold their own connection (stdio: process) at once'),
  maxPrincipalConnections: z.number().int().min(1).default(256).describe('isolation: principal — at most this many principals hold their own connection at once; the one idle longest is closed to make room'),
  idleCloseMs: positiveMs.default(10 * 60_000).describe('isolation: principal — a principal\'s connection with no call for this long is closed (opened again on the next call)'),
  concurrency: concurrencySchema.optional().describe('cap on calls running at once on this upstream, with a bounded wait for a slot'),
  circuitBreaker: circuitBreakerSchema.default({ ...DEFAULT_CIRCUIT_BREAKER }).describe('fail calls fast while this upstream keeps failing'),
  retries: retriesSchema.default({ ...DEFAULT_RETRIES }).describe('retries of read-only or idempotent tools after a connection failure'),
  tools: toolsSchema.default({ include: ['*'], exclude: [], rename: {}, timeoutMs: {} }).describe('which of its tools are served, under which names, with which timeouts'),
  prompts: promptsSchema.default({ include: ['*'], exclude: [], rename: {} }).describe('which of its prompts are served, under which names'),
  resources: resourcesSchema.default({ include: ['*'], exclude: [] }).describe('which of its resources and resource templates are served (URIs are never rewritten)'),
  start: startSchema.optional().describe('stdio: eager (default, or upstreamDefaults.start) starts it with the gateway; lazy on its first call'),
  idleStopMs: idleStopMsSchema.optional(),
  limits: processLimitsSchema.optional()
}).superRefine((u, ctx) => {
  // Runs even when other fields failed (see `when`), so every mistake is reported at once; the
  // value may be partly invalid here, hence the defensive checks.
  if (typeof u !== 'object' || u === null) return
  if (u.protocol === '2026-07-28' && u.transport !== 'streamable-http') ctx.addIssue({ code: 'custom', path: ['protocol'], message: `2026-07-28 needs transport streamable-http (a ${u.transport} upstream speaks 2025-11-25 or older)` })
  const perUser = u.auth?.type === 'oauth' || u.auth?.type === 'token_exchange'
  if (perUser && u.isolation === 'shared') ctx.addIssue({ code: 'custom', path: ['isolation'], message: `auth type ${String(u.auth?.type)} acts for each user: needs isolation principal or session, never shared` })
  if (u.auth !== undefined && u.transport === 'stdio') ctx.addIssue({ code: 'custom', path: ['auth'], message: 'not allowed for transport stdio (give the process its credentials in env)' })
  if (u.transport === 'stdio') {
    if (u.command === undefined) ctx.addIssue({ code: 'custom', path: ['command'], message: 'required for transport stdio' })
    if (u.url !== undefined) ctx.addIssue({ code: 'custom', path: ['url'], message: 'not allowed for transport stdio' })
    return
  }
  if (u.command !== undefined) ctx.addIssue({ code: 'custom', path: ['command'], message: `not allowed for transport ${u.transport}` })
  for (const key of misplacedProcessKeys(u)) ctx.addIssue({ code: 'custom', path: [key], message: `only for transport stdio: the gateway runs no process for a ${u.transport} upstream to start, stop or limit` })
  if (u.url === undefined) {
    ctx.addIssue({ code: 'custom', path: ['url'], message: `required for transport ${u.transport}` })
    return
  }
  if (typeof u.url !== 'string' || !['streamable-http', 'sse', 'websocket'].includes(u.transport)) return
  const protocols = u.transport === 'websocket' ? ['ws:', 'wss:'] : ['http:', 'https:']
  let parsed: URL | undefined
  try { parsed = new URL(u.url) } catch { parsed = undefined }
  if (parsed === undefined || !protocols.includes(parsed.protocol)) {
    ctx.addIssue({ code: 'custom', path: ['url'], message: `must be a ${protocols.join(' or ')} URL` })
  }
}, { when: () => true })

const listenSchema = z.strictObject({
  host: z.string().min(1).default(DEFAULT_LISTEN_HOST).describe('the address to bind; anything but loopback needs an auth section (or allowUnauthenticated)'),
  port: z.number().int().min(0).max(65535).default(DEFAULT_LISTEN_PORT).describe('0: any free port'),
  allowUnauthenticated: z.boolean().default(false).describe('serve a non-loopback address without an auth section (only behind something that authenticates for you)')
})

const catalogSchema = z.strictObject({
  separator: z.string().regex(SEPARATOR, 'must be 1-4 characters of [A-Za-z0-9_-]').default(DEFAULT_SEPARATOR).describe('between prefix and name in exposed tool and prompt names'),
  maxNameLength: z.number().int().min(16).max(128).default(DEFAULT_MAX_NAME_LENGTH).describe('longer exposed names are shortened with a stable hash; 64 is the Anthropic, OpenAI and Gemini limit'),
  pageSize: z.number().int().min(1).max(10_000).default(DEFAULT_PAGE_SIZE).describe('entries per tools/prompts/resources list page'),
  listChangedDebounceMs: z.number().int().min(0).max(60_000).default(100).describe('a burst of upstream list changes within this becomes one re-list and one notification per session')
})

const resumabilitySchema = z.strictObject({
  maxEventsPerStream: z.number().int().min(1).default(1000).describe('events kept per SSE stream for replay; older ones are dropped'),
  maxStreamsPerSession: z.number().int().min(1).default(100).describe('streams whose events are kept per session; the oldest stream is dropped first'),
  maxBytesPerSession: z.number().int().min(1024).default(4 * 1024 * 1024).describe('bytes of events kept per session')
}).describe('bounds of the in-memory event store that lets SSE clients resume with Last-Event-ID')

const inputRequiredSchema = z.strictObject({
  ttlMs: positiveMs.default(60_000).describe('how long a 2026-07-28 call whose upstream asked the client something waits for the retry with the answers; then the questions fail and the call is cancelled'),
  maxPending: z.number().int().min(1).default(1000).describe('such calls waiting at once; past that an upstream\'s question is refused at once')
}).describe('the input_required bridge: 2025-11-25 upstreams asking 2026-07-28 clients (sampling, elicitation, roots)')

export const DEFAULT_CONNECT_SESSION_TTL_MS = 15 * 60_000
export const DEFAULT_CONNECT_LINK_TTL_MS = 10 * 60_000

const connectSchema = z.strictObject({
  sessionTtlMs: positiveMs.max(24 * 3_600_000).default(DEFAULT_CONNECT_SESSION_TTL_MS).describe('how long a browser that proved who it is (IdP sign-in or API key form) may connect accounts without proving it again (an HttpOnly cookie scoped to the connect routes)'),
  linkTtlMs: positiveMs.max(3_600_000).default(DEFAULT_CONNECT_LINK_TTL_MS).describe('how long a connect link handed to a client (URL elicitation, -32042) stays valid; each link is good once'),
  apiKeys: z.enum(['form', 'refuse']).default('form').describe('form: an API-key principal proves it is at the browser by typing its key into the connect page (POSTed once, throttled per address); refuse: API-key principals cannot connect accounts')
}).describe('the per-user connect flow: how the person at the browser is proven')

const httpSchema = z.strictObject({
  maxBodyBytes: z.number().int().min(1024).default(4 * 1024 * 1024).describe('a larger POST body gets 413; also the largest WebSocket message'),
  sessionIdleMs: positiveMs.default(30 * 60_000).describe('a session unused this long expires'),
  keepAliveMs: positiveMs.default(15_000).describe('SSE comment interval on open streams'),
  allowedHosts: z.array(z.string().min(1)).default([]).describe('Host values accepted besides the loopback names; needed when binding elsewhere'),
  allowedOrigins: z.array(z.string().min(1)).default([]).describe('Origin values accepted besides loopback origins'),
  retryMs: positiveMs.default(1000).describe('SSE retry hint sent in the priming event of each stream (2025-11-25 clients)'),
  modernClients: z.boolean().default(true).describe('serve MCP 2026-07-28 clients statelessly on the same paths (server/discover, no session, input_required for what an upstream asks them, subscriptions/listen); off, they get 400 -32000 and fall back to initialize'),
  inputRequired: inputRequiredSchema.default({ ttlMs: 60_000, maxPending: 1000 }),
  resumability: resumabilitySchema.default({ maxEventsPerStream: 1000, maxStreamsPerSession: 100, maxBytesPerSession: 4 * 1024 * 1024 }),
  maxJsonDepth: z.number().int().min(8).max(1_000_000).default(DEFAULT_MAX_JSON_DEPTH).describe('a JSON-RPC message nesting objects and arrays deeper than this is refused with -32600 (HTTP 400; on a WebSocket, an error message) before it is parsed, on every path and transport'),
  headersTimeoutMs: positiveMs.default(DEFAULT_HEADERS_TIMEOUT_MS).describe('a client must send a request\'s headers within this, on the MCP and admin listeners; a slower one (slowloris) gets 408 and is disconnected within a second more, whether it reads or not'),
  requestTimeoutMs: positiveMs.default(DEFAULT_REQUEST_TIMEOUT_MS).describe('a client must send a whole request, body included, within this, on the MCP and admin listeners; the response is not bounded by it (SSE streams and WebSockets stay open)'),
  publicUrl: z.string().url().optional().describe('the gateway\'s external base URL (https://mcp.example.com): OAuth redirect URIs and connect links are made from it; default: http://<listen address>'),
  connect: connectSchema.default({ sessionTtlMs: DEFAULT_CONNECT_SESSION_TTL_MS, linkTtlMs: DEFAULT_CONNECT_LINK_TTL_MS, apiKeys: 'form' })
}).superRefine((h, ctx) => {
  if (h.headersTimeoutMs > h.requestTimeoutMs) ctx.addIssue({ code: 'custom', path: ['headersTimeoutMs'], message: `must not exceed requestTimeoutMs (${h.requestTimeoutMs})` })
})

const shutdownSchema = z.strictObject({
  graceMs: positiveMs.default(10_000).describe('how long in-flight calls may run after SIGTERM'),
  killAfterMs: positiveMs.default(2_000).describe('stdio: SIGTERM → SIGKILL delay'),
  drainDelayMs: z.number().int().nonnegative().default(0).describe('after SIGTERM, /readyz is 503 while requests are still served this long, so load balancers stop routing here before the listener closes (5000 behind Kubernetes or HAProxy)')
})

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])

interface Address { host?: unknown, port?: unknown }

/** Two binds that would collide: one port (0 means "any free one") on one host, a wildcard, or loopback twice. */
function sharesListener (mcp: Address | undefined, admin: Address | undefined): boolean {
  if (typeof mcp !== 'object' || mcp === null || typeof admin !== 'object' || admin === null) return false
  if (typeof mcp.port !== 'number' || mcp.port === 0 || mcp.port !== admin.port) return false
  if (typeof mcp.host !== 'string' || typeof admin.host !== 'string') return false
  const a = mcp.host.toLowerCase()
  const b = admin.host.toLowerCase()
  return a === b || WILDCARD_HOSTS.has(a) || WILDCARD_HOSTS.has(b) || (isLoopbackHost(a) && isLoopbackHost(b))
}

export const configSchema = z.strictObject({
  listen: listenSchema.default({ host: DEFAULT_LISTEN_HOST, port: DEFAULT_LISTEN_PORT, allowUnauthenticated: false }).describe('where the MCP listener binds (loopback by default)'),
  upstreams: z.array(upstreamSchema).default([]).describe('the MCP servers behind the gateway, each served under its prefix'),
  upstreamDefaults: upstreamDefaultsSchema.optional(),
  endpoints: z.array(endpointSchema).default([]).describe('named views of the catalog, each served at /mcp/<name>'),
  catalog: catalogSchema.default({ separator: DEFAULT_SEPARATOR, maxNameLength: DEFAULT_MAX_NAME_LENGTH, pageSize: DEFAULT_PAGE_SIZE, listChangedDebounceMs: 100 }).describe('how the merged catalog names and pages its tools, prompts and resources'),
  http: httpSchema.default({ maxBodyBytes: 4 * 1024 * 1024, sessionIdleMs: 30 * 60_000, keepAliveMs: 15_000, allowedHosts: [], allowedOrigins: [], retryMs: 1000, modernClients: true, inputRequired: { ttlMs: 60_000, maxPending: 1000 }, resumability: { maxEventsPerStream: 1000, maxStreamsPerSession: 100, maxBytesPerSession: 4 * 1024 * 1024 }, maxJsonDepth: DEFAULT_MAX_JSON_DEPTH, headersTimeoutMs: DEFAULT_HEADERS_TIMEOUT_MS, requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS, connect: { sessionTtlMs: DEFAULT_CONNECT_SESSION_TTL_MS, linkTtlMs: DEFAULT_CONNECT_LINK_TTL_MS, apiKeys: 'form' } }).describe('the downstream HTTP, SSE and WebSocket transports: sessions, streams, Host and Origin checks, limits on what clients send'),
  shutdown: shutdownSchema.default({ graceMs: 10_000, killAfterMs: 2_000, drainDelayMs: 0 }).describe('what SIGTERM and SIGINT do, and how long each step may take'),
  auth: authSchema.optional().describe('absent: no authentication, allowed only on a loopback address'),
  policies: policiesSchema.default({ default: 'allow', rules: [] }).describe('who may see and call which tools, prompts and resources'),
  limits: limitsSchema.default({ ...DEFAULT_LIMITS }),
  rateLimits: rateLimitsSchema.default({ store: 'memory', keyPrefix: 'switchboard:rl', redisTimeoutMs: 250, rules: [] }).describe('calls per window by principal, tool, upstream or globally, in memory or shared through Redis'),
  audit: auditSchema.default({ enabled: true, arguments: false, redact: DEFAULT_AUDIT_REDACT, redactPatterns: DEFAULT_AUDIT_REDACT_PATTERNS }).describe('the audit log: one line per tools/call'),
  redis: redisSchema.optional().describe('the Redis shared by sessions, stream events, cross-replica messages, and by rate limits and pins unless they name their own'),
  sessions: sessionsSchema.default({ store: 'memory' }).describe('where downstream sessions live: one replica, or Redis for several'),
  pinning: pinningSchema.default(PINNING_DEFAULTS).describe('tool-definition pinning (rug-pull defence)'),
  scanning: scanningSchema.default({ ...SCANNING_DEFAULTS, allowedHosts: [] }).describe('tool definitions scanned for poisoning when first seen and on every change'),
  guardrails: guardrailsSchema.default({ results: { ...GUARDRAILS_DEFAULTS.results }, arguments: { ...GUARDRAILS_DEFAULTS.arguments } }).describe('secrets in arguments and results, result size, an external guardrail hook'),
  admin: adminSchema.optional().describe('the admin API on its own listener (absent: no admin API)'),
  tokens: tokensSchema.optional(),
  tracing: tracingSchema.default({ ...TRACING_DEFAULTS, headers: {} }).describe('OpenTelemetry traces over OTLP (off by default)'),
  metrics: metricsSchema.optional().describe('absent: /metrics on the MCP listener is public'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('the gateway\'s own log level (pino JSON on stdout)'),
  logging: loggingSchema.default({ ...LOGGING_DEFAULTS })
}).superRefine((c, ctx) => {
  if (c.auth === undefined && typeof c.listen === 'object' && c.listen !== null && typeof c.listen.host === 'string' &&
    !isLoopbackHost(c.listen.host) && c.listen.allowUnauthenticated !== true) {
    ctx.addIssue({ code: 'custom', path: ['auth'], message: `required when listening on ${c.listen.host}, which is not a loopback address (or set listen.allowUnauthenticated: true if something in front authenticates)` })
  }
  if (typeof c.sessions === 'object' && c.sessions !== null && c.sessions.store === 'redis' && c.redis === undefined) {
    ctx.addIssue({ code: 'custom', path: ['redis'], message: 'required when sessions.store is redis' })
  }
  if (typeof c.tokens === 'object' && c.tokens !== null && c.tokens.store === 'redis' && c.redis === undefined) {
    ctx.addIssue({ code: 'custom', path: ['redis'], message: 'required when tokens.store is redis' })
  }
  for (const key of ['rateLimits', 'pinning'] as const) {
    const block = c[key] as { store?: unknown, redisUrl?: unknown } | undefined
    if (typeof block === 'object' && block !== null && block.store === 'redis' && block.redisUrl === undefined && c.redis === undefined) {
      ctx.addIssue({ code: 'custom', path: [key, 'redisUrl'], message: 'required for store redis (or set the redis block)' })
    }
  }
  if (sharesListener(c.listen, c.admin?.listen)) {
    ctx.addIssue({ code: 'custom', path: ['admin', 'listen', 'port'], message: 'must differ from listen.port: the admin API never shares the MCP listener' })
  }
  checkEndpoints(c, (path, message) => { ctx.addIssue({ code: 'custom', path, message }) })
  // A JWT principal proves itself at the browser by signing in at the same identity provider.
  if (Array.isArray(c.upstreams) && c.upstreams.some(u => typeof u === 'object' && u !== null && u.auth?.type === 'oauth') &&
    typeof c.auth?.jwt === 'object' && c.auth.jwt !== null && c.auth.jwt.browser === undefined) {
    ctx.addIssue({ code: 'custom', path: ['auth', 'jwt', 'browser'], message: 'required when an upstream has auth.type oauth: a JWT principal proves who opens a connect link by signing in at jwt.issuer ({ clientId, clientSecret })' })
  }
  const seen = new Map<string, number>()
  if (!Array.isArray(c.upstreams)) return
  c.upstreams.forEach((u, i) => {
    if (typeof u !== 'object' || u === null || typeof u.name !== 'string') return
    const first = seen.get(u.name)
    if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'name'], message: `duplicate upstream name "${u.name}" (also upstreams[${first}])` })
    else seen.set(u.name, i)
  })
}, { when: () => true })

export type GatewayConfig = z.output<typeof configSchema>
export type UpstreamConfig = GatewayConfig['upstreams'][number]
export type { EndpointConfig } from './endpoints-schema.ts'
export type CatalogConfig = GatewayConfig['catalog']
export type HttpConfig = GatewayConfig['http']
export type TransportKind = UpstreamConfig['transport']
