import type { CredentialProviders } from './credentials/credential-providers.ts'
import fastifyWebsocket from '@fastify/websocket'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { createAuthenticator } from './auth/authenticator.ts'
import { createReloadable } from './config/reloadable.ts'
import type { ReloadRegistration } from './config/reload-registration.ts'
import type { GatewayConfig } from './config/schema.ts'
import { type ConnectOptions, createGateway, type Gateway } from './gateway/gateway.ts'
import { connectUpstreams } from './gateway/connect-setup.ts'
import { registerConnectRoutes } from './http/connect-setup.ts'
import { publicUrlOf } from './credentials/create-identity.ts'
import { createStatelessDeps } from './gateway/stateless-deps.ts'
import { createClientErrorHandler } from './http/client-error.ts'
import { adminRoutes } from './http/admin-routes.ts'
import { createAdminEdgeHook } from './http/admin-edge.ts'
import { consoleRoutes } from './http/console-routes.ts'
import { createConsoleSignIns } from './ops/console-sign-ins.ts'
import { createAdminThrottle } from './ops/admin-throttle.ts'
import { authRoutes, createAuthHook } from './http/auth-routes.ts'
import { createEdgePolicy } from './http/edge-guard.ts'
import { createEdgeHook } from './http/edge-hook.ts'
import { mcpRoutes } from './http/mcp-routes.ts'
import { closeStateless } from './session/stateless.ts'
import { opsRoutes } from './http/ops-routes.ts'
import { loadTracing } from './observability/tracing.ts'
import { VERSION } from './version.ts'
import { isLoopbackHost } from './net/loopback.ts'
import { onRedisAuthOutage } from './net/redis-auth-watch.ts'
import { onRedisRevival } from './net/redis-revival.ts'
import { createAdminService } from './ops/admin-service.ts'
import { CallStats } from './observability/call-stats.ts'
import { createReloader, type Reload } from './ops/reloader.ts'

export const MCP_PATH = '/mcp'

export interface App {
  app: FastifyInstance
  gateway: Gateway
  /**
   * The orderly end a signal starts: `/readyz` turns 503 at once, every request is still served for
   * `shutdown.drainDelayMs` (so load balancers notice and route elsewhere), then `app.close()`.
   * Calling it again while the delay runs cuts the delay short.
   */
  shutdown: () => Promise<void>
  /** Reads, validates and applies the config file again (SIGHUP, --watch, POST /admin/reload). */
  reload: Reload
  /** The admin API's own app, when `admin` is configured; listens where main.ts (or a test) says. */
  admin?: FastifyInstance
}

export interface BuildOptions {
  /** The file the config came from: what a reload reads. Without it a reload is refused. */
  configFile?: string
  /** The connect flow of per-user OAuth upstreams (auth type oauth); without it no request is gated and no connect route served. */
  connect?: ConnectOptions
  /** The credential providers by auth type (tests of the connect gate give their own); default: from the config. */
  credentials?: CredentialProviders
}

/** The Fastify app with every route registered in order. Never listens: main.ts and tests do. */
export async function buildApp (config: GatewayConfig, log: Logger, env: Readonly<Record<string, string | undefined>>, options: BuildOptions = {}): Promise<App> {
  const stopRedisAuthLog = logRedisAuthOutages(log.child({ component: 'redis' }))
  const stopRevivalLog = onRedisRevival((event) => { log.child({ component: 'redis' }).error(event, 'a Redis connection ended although the gateway did not close it (e.g. a Sentinel failover mid-connect); connecting it again') })
  const gateway = createGateway(config, log, env, await loadTracing(config.tracing, VERSION), { connect: options.connect, credentials: options.credentials, configPath: options.configFile })
  const authLog = log.child({ component: 'auth' })
  const authenticator = createReloadable(createAuthenticator(config.auth, authLog))
  const reloads: ReloadRegistration[] = [
    ...gateway.reloads,
    { section: 'auth', apply: (next) => { authenticator.replace(createAuthenticator(next.auth, authLog)) } }
  ]
  const reload = options.configFile === undefined
    ? async () => ({ outcome: 'invalid' as const, errors: [{ path: '(file)', message: 'this gateway was not started from a config file' }] })
    : createReloader({
      file: options.configFile,
      env,
      current: () => gateway.config,
      registrations: reloads,
      metrics: gateway.metrics,
      log: log.child({ component: 'reload' })
    })
  const app = Fastify({
    loggerInstance: log as unknown as FastifyBaseLogger,
    // A log line per request would cost more than the routing itself; errors are logged where handled.
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request: it cost ~5% of the gateway's CPU per call; handlers log with their own context.
    childLoggerFactory: (logger) => logger,
    bodyLimit: config.http.maxBodyBytes,
    // Slow and half-open clients (slowloris): headers and the whole request must arrive in time.
    // Node bounds only the receiving of a request, so SSE responses and WebSockets stay open.
    http: listenerTimeouts(config.http),
    requestTimeout: config.http.requestTimeoutMs,
    // Streams end in preClose; anything still idle is closed rather than waited for.
    forceCloseConnections: 'idle',
    // Not Fastify's own 503 (one body for every route): while the listener is open, /healthz stays 200
    // and /readyz says draining; the MCP routes refuse with a JSON-RPC error and Retry-After.
    return503OnClosing: false,
    // What Node's parser refuses (oversize headers, a malformed request, too slow) gets a JSON-RPC body,
    // and the connection is dropped within a second even if the client never reads it.
    clientErrorHandler: countingClientErrors(gateway)
  })
  // First: its onRequest hook marks upgrade requests, so that a refused upgrade's socket is closed.
  await app.register(fastifyWebsocket, {
    options: {
      maxPayload: config.http.maxBodyBytes,
      // The SDK's WebSocketClientTransport asks for subprotocol "mcp"; clients that ask for none are served too.
      handleProtocols: (protocols) => protocols.has('mcp') ? 'mcp' : false
    }
  })
  // The gateway's own pages (the connect flow's forms) post from its public origin.
  const edge = createEdgePolicy(config.listen.host, config.http.allowedHosts, [...config.http.allowedOrigins, new URL(publicUrlOf(config)).origin])
  // Before every route, unknown paths included: Host and Origin are checked on the whole listener.
  app.addHook('onRequest', createEdgeHook(edge, gateway.metrics))
  await app.register(opsRoutes, {
    registry: gateway.metrics.registry,
    isReady: () => gateway.ready,
    isDraining: () => gateway.draining,
    status: () => gateway.pool.status(),
    metricsToken: () => gateway.config.metrics?.token,
    detailTokens: () => [gateway.config.metrics?.token, gateway.config.admin?.token]
  })
  if (!isLoopbackHost(config.listen.host) && config.metrics?.token === undefined) {
    log.warn({ host: config.listen.host }, '/metrics is served without authentication beyond loopback: set metrics.token (Prometheus sends it as a bearer token)')
  }
  // Public: a client reads it after a 401 to find the authorization server.
  await app.register(authRoutes, { auth: () => gateway.config.auth })
  const authHook = createAuthHook(() => authenticator.current(), gateway.metrics)
  // Routes are fixed once the app is ready: served when an upstream had per-user OAuth at start.
  if (connectUpstreams(config).size > 0) await registerConnectRoutes(app, gateway, config, authHook, log)
  const stateless = config.http.modernClients ? createStatelessDeps(gateway, config.http.inputRequired) : undefined
  if (stateless !== undefined) app.addHook('preClose', async () => { closeStateless(stateless) })
  await app.register(mcpRoutes, {
    path: MCP_PATH,
    legacy: { ssePath: '/sse', messagesPath: '/messages' },
    dispatcher: gateway.dispatcher,
    sessions: gateway.sessions,
    metrics: gateway.metrics,
    edge,
    keepAliveMs: config.http.keepAliveMs,
    retryMs: config.http.retryMs,
    store: gateway.events,
    isDraining: () => gateway.stopping,
    authHook,
    endpoints: gateway.endpoints,
    stateless,
    limits: gateway.limits,
    maxJsonDepth: config.http.maxJsonDepth,
    replica: gateway.sessionStore.replica,
    router: gateway.router
  })
  app.addHook('onReady', async () => { gateway.start() })
  app.addHook('preClose', async () => { await gateway.close() })
  app.addHook('onClose', async () => { stopRedisAuthLog(); stopRevivalLog() })
  const admin = config.admin === undefined ? undefined : await buildAdminApp(gateway, reload, log)
  if (admin !== undefined) app.addHook('onClose', async () => { await admin.close() })
  return { app, gateway, shutdown: createShutdown(app, gateway), reload, ...(admin === undefined ? {} : { admin }) }
}

/** A refused Redis password at error, once per outage (not per reconnect), and its end at info. */
function logRedisAuthOutages (log: Logger): () => void {
  return onRedisAuthOutage((event) => {
    if (event.kind === 'failed') {
      log.error({ redis: event.redis, connection: event.connection, err: event.error }, 'Redis refused the gateway\'s credentials (WRONGPASS/NOAUTH): check the user and password in the Redis URL; retrying every second meanwhile')
    } else {
      log.info({ redis: event.redis, outageMs: event.outageMs }, 'Redis accepted the gateway\'s credentials again')
    }
  })
}

/** Largest pause between Node's checks of headersTimeout and requestTimeout (its own default is 30 s). */
const MAX_TIMEOUT_CHECK_MS = 1_000

/** Node's timeouts of a request's headers and of the whole request, checked often enough to hold to them. */
export function listenerTimeouts (http: { headersTimeoutMs: number, requestTimeoutMs: number }): { headersTimeout: number, requestTimeout: number, connectionsCheckingInterval: number } {
  return {
    headersTimeout: http.headersTimeoutMs,
    requestTimeout: http.requestTimeoutMs,
    connectionsCheckingInterval: Math.max(1, Math.min(MAX_TIMEOUT_CHECK_MS, Math.floor(http.headersTimeoutMs / 4)))
  }
}

/** Parser refusals answered and dropped (see createClientErrorHandler), timeouts counted by kind. */
function countingClientErrors (gateway: Gateway): ReturnType<typeof createClientErrorHandler> {
  return createClientErrorHandler((kind) => { gateway.metrics.httpTimeouts.inc({ kind }) })
}

/** The admin API on an app of its own: it never answers on the MCP listener. */
async function buildAdminApp (gateway: Gateway, reload: Reload, log: Logger): Promise<FastifyInstance> {
  const admin = Fastify({
    loggerInstance: log.child({ component: 'admin' }) as unknown as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: true,
    // The same bounds on slow clients as the MCP listener: Node's own (60 s for headers, none for
    // the body once Fastify's requestTimeout is 0) would let a local process hold its sockets.
    http: listenerTimeouts(gateway.config.http),
    requestTimeout: gateway.config.http.requestTimeoutMs,
    clientErrorHandler: countingClientErrors(gateway)
  })
  const token = (): string => gateway.config.admin?.token ?? ''
  const { metrics } = gateway
  // Before every route, unknown paths included: security headers, then Host and Origin.
  admin.addHook('onRequest', createAdminEdgeHook(() => gateway.config.admin))
  // The console's routes are fixed at start; its lifetime and cap are read per sign-in.
  const consoleOn = gateway.config.admin?.console.enabled ?? false
  const ttlMs = (): number => gateway.config.admin?.console.sessionTtlMs ?? 60_000
  const signIns = consoleOn
    ? createConsoleSignIns({ ttlMs, maxSessions: () => gateway.config.admin?.console.maxSessions ?? 1 })
    : undefined
  if (signIns !== undefined) metrics.countConsoleSignIns(() => signIns.size)
  // One count of wrong tokens for the whole listener: bearer tokens and console sign-ins alike.
  const throttle = { throttle: createAdminThrottle(), throttled: metrics.adminThrottled }
  // The console's sparklines: counted from the admin app's start, for as long as it is open.
  const stats = new CallStats({ known: () => gateway.config.upstreams.map(u => u.name) })
  const unfollow = stats.follow(gateway.calls)
  admin.addHook('onClose', async () => { unfollow() })
  const consoleDeps = { config: () => gateway.config, sessions: gateway.sessions, catalogs: gateway.catalogs, endpoints: gateway.endpoints, policy: () => gateway.policy, pins: gateway.pins, dispatcher: gateway.dispatcher, pool: gateway.pool, calls: gateway.calls, stats }
  await admin.register(adminRoutes, {
    ...createAdminService({ config: () => gateway.config, pool: gateway.pool, sessions: gateway.sessions, reload, connections: gateway.connect?.flows, approvals: gateway.approvals.operator, pins: gateway.pins, console: consoleDeps }),
    token,
    metrics: metrics.registry,
    signIns,
    events: { gauge: metrics.consoleEventStreams },
    throttle
  })
  if (signIns !== undefined) {
    await admin.register(consoleRoutes, { signIns, throttle, token, logins: metrics.consoleLogins })
    admin.addHook('onClose', async () => { signIns.clear() })
  }
  return admin
}

function createShutdown (app: FastifyInstance, gateway: Gateway): () => Promise<void> {
  let done: Promise<void> | undefined
  let cutDelayShort: (() => void) | undefined
  return async () => {
    if (done !== undefined) {
      cutDelayShort?.()
      return await done
    }
    gateway.beginDrain()
    const delayMs = gateway.config.shutdown.drainDelayMs
    done = (async () => {
      if (delayMs > 0) {
        gateway.log.info({ drainDelayMs: delayMs }, 'draining: /readyz is 503, requests still served until the delay ends')
        await new Promise<void>(resolve => {
          const timer = setTimeout(resolve, delayMs)
          cutDelayShort = () => { clearTimeout(timer); resolve() }
        })
      }
      await app.close()
    })()
    return await done
  }
}
