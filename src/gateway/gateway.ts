import type { Logger } from 'pino'
import { CatalogStore } from '../catalog/catalog-store.ts'
import { createReloadable } from '../config/reloadable.ts'
import type { ReloadRegistration } from '../config/reload-registration.ts'
import type { GatewayConfig, UpstreamConfig } from '../config/schema.ts'
import { PrincipalLimits } from '../limits/principal-limits.ts'
import { createMetrics, type Metrics } from '../observability/metrics.ts'
import { TRACING_OFF, type Tracing } from '../observability/tracing.ts'
import { createAccessPolicy, type AccessPolicy } from '../policy/access-policy.ts'
import { ConcurrencyLimiter } from '../policy/concurrency-limiter.ts'
import { createRateLimiter, type RateLimiter } from '../policy/rate-limiter.ts'
import { Dispatcher } from '../session/dispatcher.ts'
import type { EventStore } from '../session/event-store.ts'
import { SessionManager } from '../session/session-manager.ts'
import type { Session } from '../session/session.ts'
import { createEventStore, createSessionStore } from './create-stores.ts'
import { TaskRelay } from './task-relay.ts'
import { serveTaskHere, taskForwarder } from './task-forwarding.ts'
import { RetryRouter } from '../session/retry-router.ts'
import type { SessionStore } from '../session/session-store.ts'
import { CIRCUIT_STATES } from '../upstream/circuit-breaker.ts'
import type { UpstreamListener } from '../upstream/upstream-connection.ts'
import { UpstreamPool } from '../upstream/upstream-pool.ts'
import { ToolPins } from '../trust/tool-pins.ts'
import { ToolScanner } from '../guardrails/scanning/tool-scanner.ts'
import { applyScanning, upstreamHost } from '../guardrails/scanning/scanning-reload.ts'
import { createAuditLog } from './audit.ts'
import { CallFeed } from '../observability/call-feed.ts'
import { createCallTool } from './call-tool.ts'
import { createGuards, type Guards } from '../guardrails/guards.ts'
import { type Approvals, createApprovals } from '../approval/approvals.ts'
import { createClientRelay } from './client-relay.ts'
import { Endpoints } from './endpoints.ts'
import { createMethods } from './methods.ts'
import { Subscriptions } from './subscriptions.ts'
import { VERSION } from '../version.ts'
import type { ConnectFlows } from '../credentials/connect-flows.ts'
import type { ConnectGate } from '../credentials/connect-gate.ts'
import { createIdentity } from '../credentials/create-identity.ts'
import type { CredentialProviders } from '../credentials/credential-providers.ts'
import { createFirstListing } from './first-listing.ts'
import { createSharedListings, listingBusOf } from './shared-listings.ts'
import { type ConnectOptions, createConnect } from './connect-setup.ts'

export const SERVER_INFO = { name: 'switchboard', title: 'Switchboard MCP gateway', version: VERSION }

export type { ConnectOptions }

export interface GatewayOptions {
  /** The connect flow of `auth: { type: oauth }` upstreams; default: the one the config's identity services make. */
  connect?: ConnectOptions | undefined
  /** The config file: the token vault's file store lives beside it. */
  configPath?: string | undefined
  /** The credential providers by auth type; default: the ones the config's identity services make. */
  credentials?: CredentialProviders | undefined
}

/** Every domain service, wired once. Knows nothing about HTTP: the edge plugs transports into `dispatcher`. */
export interface Gateway {
  /** The config in force: the one it started with, or the last one a reload applied. */
  readonly config: GatewayConfig
  log: Logger
  metrics: Metrics
  catalogs: CatalogStore
  /** The configured endpoints (/mcp/<name>); a reload replaces their selections. */
  endpoints: Endpoints
  readonly policy: AccessPolicy
  readonly limiter: RateLimiter
  pool: UpstreamPool
  sessions: SessionManager
  /** Where sessions live beyond this process, and the bus between replicas. */
  sessionStore: SessionStore
  /** Forwards what must be served on the replica that holds it; undefined with one replica. */
  router: RetryRouter | undefined
  dispatcher: Dispatcher
  /** SSE events kept for clients that resume a stream. */
  events: EventStore
  /** The caps per principal (and per session) of this replica: sessions, streams, listens, requests in flight. */
  limits: PrincipalLimits
  /** Effect ask: the calls held for a human's approval (the admin API decides the operator's). */
  approvals: Approvals
  /** The pin book (pinning, and the definition scan's quarantine); undefined when both are off. The admin API lists and approves through it. */
  pins: ToolPins | undefined
  /** Every finished tools/call of this replica, for whoever listens (the console). */
  calls: CallFeed
  /** The connect flow and its gate, when the gateway was given one (the routes and the admin API use it). */
  connect: { flows: ConnectFlows, gate: ConnectGate, options: ConnectOptions } | undefined
  readonly ready: boolean
  /** Readiness is off (`/readyz` 503): set by `beginDrain()` while requests are still served, and by `close()`. */
  readonly draining: boolean
  /** `close()` has begun: new requests are refused. */
  readonly stopping: boolean
  start: () => void
  /** Tell load balancers to go elsewhere; everything is still served until `close()`. */
  beginDrain: () => void
  /**
   * What a reload applies here, in order (the reloader walks them with `applyReload`): upstreams as
   * the diff says (in the background), policies, rate-limit rules, catalog options, audit and log
   * level for the next request. Sessions stay; each whose visible lists changed hears so once.
   */
  reloads: readonly ReloadRegistration[]
  /** Stop taking work, let in-flight calls finish within the grace period, close every upstream. */
  close: () => Promise<void>
}

const DRAIN_POLL_MS = 25
/** Tasks created through the gateway that it remembers: at most this many, each at most a day after its last news. */
const TASK_LIMITS = { maxTasks: 10_000, maxTtlMs: 24 * 60 * 60_000 }

/** `env` is the gateway's own environment, of which stdio upstreams inherit only PATH, HOME and the like. */
export function createGateway (initial: GatewayConfig, log: Logger, env: Readonly<Record<string, string | undefined>>, tracing: Tracing = TRACING_OFF, options: GatewayOptions = {}): Gateway {
  const config = createReloadable(initial)
  const metrics = createMetrics()
  const scanner = new ToolScanner(initial.scanning, { log: log.child({ component: 'scanning' }), metrics, ownHost: upstream => upstreamHost(config.current(), upstream) })
  // The scan's quarantine is the pin book's, so the pins are kept when either needs them.
  const pins = initial.pinning.mode === 'off' && initial.scanning.mode === 'off' ? undefined : new ToolPins(initial.pinning, initial.upstreams.map(u => u.name), { log: log.child({ component: 'pins' }), metrics, scanner, redis: initial.redis })
  const catalogs = new CatalogStore(initial, log.child({ component: 'catalog' }), pins)
  const policy = createReloadable(createAccessPolicy(initial.policies))
  const endpoints = new Endpoints(initial.endpoints, catalogs)
  const newLimiter = (c: GatewayConfig): RateLimiter => createRateLimiter(c.rateLimits, { log: log.child({ component: 'rate-limit' }), metrics, redis: c.redis })
  // Changed rules start with fresh counters; the old limiter's Redis connection closes behind it.
  const limiter = createReloadable(newLimiter(initial), { onCloseError: (err) => { log.warn({ err }, 'closing the rate limiter a reload replaced failed') } })
  const audit = createReloadable(createAuditLog(initial.audit, log))
  const concurrency = new Map(initial.upstreams.flatMap(u => u.concurrency === undefined ? [] : [[u.name, new ConcurrencyLimiter(u.concurrency)] as const]))
  const subscriptions: Subscriptions = new Subscriptions(name => pool.get(name)?.config.isolation === 'session')
  const upstreamEvents: UpstreamListener = {
    lists: (upstream, lists) => {
      metrics.upstreamTools.set({ upstream }, lists?.tools.length ?? 0)
      catalogs.update(upstream, lists)
    },
    // Stopped on purpose (lazy, idle) is not down: the next call starts it.
    state: (upstream, state) => { metrics.upstreamUp.set({ upstream }, state === 'ready' || state === 'stopped' ? 1 : 0) },
    reconnect: (upstream) => { metrics.upstreamReconnects.inc({ upstream }) },
    circuit: (upstream, state) => {
      metrics.circuitTransitions.inc({ upstream, to: state })
      for (const s of CIRCUIT_STATES) metrics.circuitState.set({ upstream, state: s }, s === state ? 1 : 0)
    },
    // The relay needs the pool and the sessions, so it is made below; the pool reaches it through these.
    notification: (connection, method, params, call) => { relay.notification(connection, method, params, call) },
    request: async (connection, request, signal, call) => await relay.request(connection, request, signal, call),
    ready: (connection) => { relay.ready(connection) }
  }
  const identity = createIdentity({ config: initial, current: config.current, configPath: options.configPath, log, metrics })
  const credentials = options.credentials ?? identity.providers
  const pool = new UpstreamPool(initial, log, upstreamEvents, { name: SERVER_INFO.name, version: VERSION }, env, credentials, {
    onPrincipalConnections: (upstream, count) => { metrics.principalConnections.set({ upstream }, count) },
    onSessionRefused: (limit) => { metrics.limitRefusals.inc({ limit }) },
    onPrincipalLists: (upstream, lists) => { listings.learned(upstream, lists) },
    hasSubscriptions: (upstream): boolean => subscriptions.uris(upstream).length > 0,
    onSpawn: (upstream, reason) => { metrics.upstreamSpawns.inc({ upstream, reason }) },
    onLazyStart: (seconds) => { metrics.upstreamLazyStart.observe(seconds) },
    onProcesses: (counts) => { for (const [state, n] of Object.entries(counts)) metrics.upstreamProcesses.set({ state }, n) }
  })
  const connect = createConnect(options.connect ?? identity.connect, config.current, pool, credentials, log)
  const seriesFor = (u: UpstreamConfig): void => {
    if (u.concurrency !== undefined) {
      metrics.upstreamInFlight.set({ upstream: u.name }, 0)
      metrics.upstreamQueued.set({ upstream: u.name }, 0)
    }
    metrics.upstreamUp.set({ upstream: u.name }, 0)
    if (u.isolation === 'principal') metrics.principalConnections.set({ upstream: u.name }, 0)
    metrics.upstreamReconnects.inc({ upstream: u.name }, 0)
    if (u.circuitBreaker.enabled) {
      for (const s of CIRCUIT_STATES) metrics.circuitState.set({ upstream: u.name, state: s }, s === 'closed' ? 1 : 0)
      metrics.circuitRejections.inc({ upstream: u.name }, 0)
    }
  }
  for (const u of initial.upstreams) seriesFor(u)
  catalogs.onChange(() => {
    const { tools, prompts, resources } = catalogs
    metrics.catalogTools.set(tools.size)
    metrics.catalogRenamed.set(tools.renamed.length + prompts.renamed.length)
    metrics.catalogItems.set({ kind: 'tools' }, tools.size)
    metrics.catalogItems.set({ kind: 'prompts' }, prompts.size)
    metrics.catalogItems.set({ kind: 'resources' }, resources.resources.length)
    metrics.catalogItems.set({ kind: 'resource_templates' }, resources.templates.length)
    metrics.resourceCollisions.set(resources.collisions.length)
  })
  const approvals = createApprovals({ metrics, audit: () => config.current().audit, log: log.child({ component: 'approval' }) })
  const sessionStore = createSessionStore(initial, metrics, log.child({ component: 'session-store' }))
  const events = createEventStore(initial, metrics, log.child({ component: 'event-store' }), sessionStore.shared ? sessionStore.replica : undefined)
  // What a user's connection teaches one replica of a per-user upstream's catalog, every replica serves.
  const listings = createSharedListings({ bus: listingBusOf(sessionStore), store: identity, config: config.current, has: (upstream) => catalogs.has(upstream), apply: upstreamEvents.lists, log: log.child({ component: 'listings' }), onMessage: (outcome) => { metrics.crossReplica.inc({ kind: 'listing', outcome }) } })
  const limits = new PrincipalLimits(initial.limits, (limit) => { metrics.limitRefusals.inc({ limit }) })
  const sessions = new SessionManager({
    idleMs: initial.http.sessionIdleMs,
    debounceMs: initial.catalog.listChangedDebounceMs,
    catalogs,
    policy: policy.current(),
    endpoints,
    metrics,
    log: log.child({ component: 'session' }),
    store: sessionStore,
    limits,
    onOpened: (session) => {
      relay.sessionOpened()
      if (session.subscribed.size > 0) relay.syncSubscriptions(session)
    },
    onUpdated: (session) => {
      relay.levelChanged(session)
      relay.syncSubscriptions(session)
    },
    onLog: (upstream, params) => relay.logFromReplica(upstream, params),
    onRouted: (kind, outcome) => { metrics.crossReplica.inc({ kind, outcome }) },
    unheld: events.standalone,
    onUnheld: (outcome) => { metrics.unheldEvents.inc({ outcome }) },
    onClosed: (session, ended) => {
      if (ended) events.dropSession(session.id)
      else events.standalone?.forget(session.id)
      relay.sessionClosed(session)
      approvals.sessionEnded(session.id)
    }
  })
  // With shared sessions, what must be served where it is held (a 2026-07-28 retry, a task) goes there.
  const router = sessionStore.shared ? new RetryRouter(sessionStore, (kind, outcome) => { metrics.crossReplica.inc({ kind, outcome }) }) : undefined
  const tasks = new TaskRelay({ ...TASK_LIMITS, replica: sessionStore.replica, onSize: (size) => { metrics.tasksRemembered.set(size) } })
  const relay = createClientRelay({ sessions, pool, subscriptions, tasks, metrics, log: log.child({ component: 'relay' }) })
  // Built once per config: a reload that changes the limiter or the audit log rebuilds the chain (see `reloads`).
  const firstListing = createFirstListing({ pool, catalogs, config: config.current, gate: () => connect?.active() })
  const guardsFor = (c: GatewayConfig): Guards => createGuards({ config: c.guardrails, metrics, log: log.child({ component: 'guardrails' }) })
  const calls = new CallFeed()
  const callTool = createCallTool({ feed: calls, catalogs, pool, metrics, log, limiter: limiter.current(), concurrency, tasks, audit: audit.current(), connectGate: connect?.active(), firstListing, policy: () => policy.current(), guards: guardsFor(initial), approval: approvals.step })
  const methodDeps = { catalogs, pool, subscriptions, tasks, forwardTask: router === undefined ? undefined : taskForwarder(router), callTool, setLevel: relay.setLevel, metrics, get pageSize () { return config.current().catalog.pageSize }, log, subscriptionsChanged: (session: Session) => { sessions.saveState(session) }, get connectGate () { return connect?.active() } }
  const methods = createMethods(methodDeps)
  const dispatcher = new Dispatcher({ sessions, methods, pool, serverInfo: SERVER_INFO, log, tracing, limits })
  router?.serve('task', serveTaskHere(sessions, () => dispatcher))

  let ready = false
  let draining = false
  let closing: Promise<void> | undefined

  async function drain (): Promise<void> {
    draining = true
    const deadline = Date.now() + config.current().shutdown.graceMs
    while (sessions.inFlightCount() > 0 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, DRAIN_POLL_MS))
    const left = sessions.inFlightCount()
    if (left > 0) log.warn({ calls: left }, 'grace period over; cancelling calls still in flight')
    sessions.close()
    router?.close()
    listings.close()
    await Promise.all([pool.close().then(identity.close), events.close(), limiter.current().close(), pins?.close(), sessionStore.close(), tracing.close()])
  }

  // In order: each entry reads what the ones before it applied (the sessions, last, every other).
  const reloads: ReloadRegistration[] = [
    { section: '*', apply: (next) => { config.replace(next) } },
    { section: 'logLevel', apply: (next) => { log.level = next.logLevel } },
    {
      section: 'upstreams',
      apply: (next, diff) => {
        for (const name of [...diff.upstreams.removed, ...diff.upstreams.changed]) {
          concurrency.delete(name)
          for (const gauge of [metrics.upstreamUp, metrics.upstreamInFlight, metrics.upstreamQueued, metrics.upstreamTools, metrics.principalConnections]) gauge.remove({ upstream: name })
          metrics.upstreamReconnects.remove({ upstream: name })
          metrics.circuitRejections.remove({ upstream: name })
          for (const s of CIRCUIT_STATES) metrics.circuitState.remove({ upstream: name, state: s })
        }
        for (const u of next.upstreams) {
          if (!diff.upstreams.added.includes(u.name) && !diff.upstreams.changed.includes(u.name)) continue
          if (u.concurrency !== undefined) concurrency.set(u.name, new ConcurrencyLimiter(u.concurrency))
          seriesFor(u)
        }
        pins?.setUpstreams(next.upstreams.map(u => u.name))
      }
    },
    // Every reload: the pool also reads the shutdown timings, the catalog the upstreams' naming.
    { section: '*', apply: (next, diff) => { void pool.apply(next, diff.upstreams).catch((err: unknown) => { log.error({ err }, 'retiring upstream connections after a reload failed') }) } },
    { section: '*', apply: (next) => { catalogs.reconfigure(next) } },
    { section: 'rateLimits', apply: (next) => { limiter.replace(newLimiter(next)) } },
    // The audit log is off at a level that drops its lines.
    { section: ['audit', 'logLevel'], apply: (next) => { audit.replace(createAuditLog(next.audit, log)) } },
    // The call chain is composed once per config: it takes the new limiter and audit log here.
    // ... and the connect gate, in it only while some upstream has per-user OAuth.
    { section: ['rateLimits', 'audit', 'logLevel', 'upstreams'], apply: () => { callTool.rebuild({ limiter: limiter.current(), audit: audit.current(), connectGate: connect?.active(), firstListing }) } },
    { section: 'policies', apply: (next) => { policy.replace(createAccessPolicy(next.policies)) } },
    { section: 'policies', apply: () => { approvals.policiesChanged() } },
    { section: 'scanning', apply: (next) => { applyScanning(next, scanner, pins, catalogs, log) } },
    { section: 'guardrails', apply: (next) => { callTool.rebuild({ guards: guardsFor(next) }) } },
    { section: 'limits', apply: (next) => { limits.reconfigure(next.limits) } },
    { section: 'endpoints', apply: (next) => { endpoints.reconfigure(next.endpoints) } },
    {
      section: '*',
      apply: (next, diff) => {
        sessions.reconfigure({ policy: policy.current(), debounceMs: next.catalog.listChangedDebounceMs }, pool.settledFor([...diff.upstreams.added, ...diff.upstreams.changed]))
      }
    }
  ]

  return {
    get config () { return config.current() },
    log,
    metrics,
    catalogs,
    endpoints,
    get policy () { return policy.current() },
    get limiter () { return limiter.current() },
    pool,
    sessions,
    sessionStore,
    router,
    dispatcher,
    events,
    limits,
    approvals,
    pins,
    calls,
    connect: connect === undefined ? undefined : { flows: connect.flows, gate: connect.gate, options: connect.options },
    get ready () { return ready },
    get draining () { return draining },
    get stopping () { return closing !== undefined },
    start () {
      // Upstreams connect once the pins are read, so no tool list is reviewed against an empty book.
      if (pins === undefined) pool.start()
      else void pins.start(() => { catalogs.recheck() }).then(() => { if (closing === undefined) pool.start() })
      void pool.settled().then(() => { ready = true })
      // A per-user upstream nobody has connected to yet here lists what a connected user last saw.
      void listings.restore()
    },
    beginDrain () { draining = true },
    reloads,
    close () {
      closing ??= drain()
      return closing
    }
  }
}
