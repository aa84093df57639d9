import type { Logger } from 'pino'
import type { Principal } from '../auth/principal.ts'
import type { ConfigDiff } from '../config/config-diff.ts'
import type { GatewayConfig, UpstreamConfig } from '../config/schema.ts'
import { CredentialProviders } from '../credentials/credential-providers.ts'
import { SwitchboardError } from '../errors.ts'
import { CircuitBreaker, type CircuitState, type CircuitTransition, isAuthFailure } from './circuit-breaker.ts'
import { type ConnectionKey, keyFor } from './connection-key.ts'
import { UpstreamConnection, type UpstreamListener } from './upstream-connection.ts'

export interface UpstreamStatus {
  name: string
  transport: string
  isolation: string
  state: string
  circuit: CircuitState
  sessionConnections: number
  /** Tools it lists now; calls running on it (its own connections of sessions included); reconnects of its current connection. */
  tools: number
  inFlight: number
  reconnects: number
  lastError?: string
  server?: unknown
  /** The revision spoken with it, once connected (2026-07-28: stateless, found by server/discover). */
  protocolVersion?: string
}

/** The downstream client a session-isolated connection is opened for. */
export interface SessionRef {
  id: string
  clientCapabilities: Readonly<Record<string, unknown>>
  /** The revision the client speaks (a 2026-07-28 client answers input_required itself). */
  readonly protocolVersion?: string
  /** The log level it asked for; a 2026-07-28 upstream is told it with each call. */
  readonly logLevel?: string
  /** Whom its requests act for: a connection opened for it carries this principal's credentials. */
  readonly principal?: Principal | undefined
}

export const DEFAULT_HEALTH_CHECK_MS = 30_000

/**
 * A shared connection may serve many clients at once, so it declares what the gateway can route
 * to the client of the call in progress (sampling, elicitation) but never roots: one client's
 * roots must not become everyone's.
 */
export const SHARED_CLIENT_CAPABILITIES = Object.freeze({ sampling: {}, elicitation: { form: {}, url: {} } })

/**
 * The listing connection of a session-isolated upstream declares everything a session's own
 * connection may declare, so that a server which offers some tools only to clients with roots,
 * sampling or elicitation lists them too.
 */
export const LISTING_CLIENT_CAPABILITIES = Object.freeze({ ...SHARED_CLIENT_CAPABILITIES, roots: { listChanged: true } })

/** A session's own connection declares exactly what its client declared. */
export function mirroredCapabilities (client: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of ['sampling', 'elicitation', 'roots']) if (client[key] !== undefined) out[key] = client[key]
  return out
}

/**
 * Every upstream's managed connection, plus the per-session connections of upstreams configured
 * with `isolation: session`, in one map by ConnectionKey (see keyFor). Starting never blocks on a
 * slow or dead upstream.
 */
export class UpstreamPool {
  private readonly connections = new Map<ConnectionKey, UpstreamConnection>()
  private readonly configs = new Map<string, UpstreamConfig>()
  private readonly credentials: CredentialProviders
  /** Per upstream, shared by its shared and session-isolated connections alike. */
  private readonly breakers = new Map<string, CircuitBreaker>()
  /** Connections a reload took out of service, finishing their calls. */
  private readonly retiring = new Set<UpstreamConnection>()
  private config: GatewayConfig
  private readonly log: Logger
  private readonly listener: UpstreamListener
  private readonly clientInfo: { name: string, version: string }
  private readonly baseEnv: Readonly<Record<string, string | undefined>>
  private closed = false

  constructor (config: GatewayConfig, log: Logger, listener: UpstreamListener, clientInfo: { name: string, version: string }, baseEnv: Readonly<Record<string, string | undefined>>, credentials = new CredentialProviders()) {
    this.config = config
    this.credentials = credentials
    this.log = log
    this.listener = listener
    this.clientInfo = clientInfo
    this.baseEnv = baseEnv
    for (const upstream of config.upstreams) this.add(upstream)
  }

  /** Registers an upstream and opens (without starting) its shared connection. */
  private add (upstream: UpstreamConfig): UpstreamConnection {
    this.configs.set(upstream.name, upstream)
    if (upstream.circuitBreaker.enabled) {
      this.breakers.set(upstream.name, new CircuitBreaker(upstream.circuitBreaker, { onTransition: (change) => { this.circuitChanged(upstream, change) } }))
    }
    const connection = this.open(upstream, this.listener, {
      // A session-isolated upstream's shared connection only lists, as a client with every capability would see it.
      clientCapabilities: upstream.isolation === 'session' ? { ...LISTING_CLIENT_CAPABILITIES } : { ...SHARED_CLIENT_CAPABILITIES }
    })
    this.connections.set(keyFor(upstream), connection)
    return connection
  }

  /** Takes an upstream's connections out of service; they finish their calls (up to its timeout) and close. */
  private retire (name: string): Array<Promise<void>> {
    const config = this.configs.get(name)
    const retiring: UpstreamConnection[] = []
    for (const [key, connection] of this.connections) {
      if (connection.name !== name) continue
      this.connections.delete(key)
      retiring.push(connection)
    }
    this.configs.delete(name)
    this.breakers.delete(name)
    return retiring.map(async (c) => {
      this.retiring.add(c)
      await c.retire(config?.timeoutMs ?? 0)
      this.retiring.delete(c)
    })
  }

  /**
   * A reload: added upstreams connect in the background, removed ones drain and close, changed ones
   * get a new connection while the old one drains, unchanged ones are left as they are. Resolves
   * once every retired connection has closed.
   */
  async apply (config: GatewayConfig, diff: ConfigDiff['upstreams']): Promise<void> {
    this.config = config
    const retiring = [...diff.removed, ...diff.changed].flatMap(name => this.retire(name))
    const fresh = new Set([...diff.added, ...diff.changed])
    for (const upstream of config.upstreams) {
      if (!fresh.has(upstream.name)) continue
      const connection = this.add(upstream)
      if (!this.closed) connection.start()
    }
    await Promise.all(retiring)
  }

  /** An operator's reconnect: a new connection takes over, the old one finishes its calls. False: no such upstream. */
  reconnect (name: string): boolean {
    const config = this.configs.get(name)
    if (config === undefined || this.closed) return false
    void this.apply(this.config, { added: [], removed: [], changed: [name], unchanged: [] })
    return true
  }

  private open (upstream: UpstreamConfig, listener: UpstreamListener, extra: { clientCapabilities: Record<string, unknown>, owner?: string, principal?: Principal }): UpstreamConnection {
    return new UpstreamConnection({
      config: upstream,
      log: this.log.child(extra.owner === undefined ? { upstream: upstream.name } : { upstream: upstream.name, session: extra.owner.slice(0, 8) }),
      listener,
      killAfterMs: this.config.shutdown.killAfterMs,
      baseEnv: this.baseEnv,
      clientInfo: this.clientInfo,
      healthCheckMs: DEFAULT_HEALTH_CHECK_MS,
      listing: extra.owner === undefined,
      credentials: this.credentials.for(upstream),
      // Any of its connections speaks for the upstream: a restart that works closes the circuit.
      // A credential refused says nothing of the upstream's health.
      onHealth: (healthy, cause) => {
        const breaker = this.breakers.get(upstream.name)
        if (healthy) breaker?.recovered()
        else if (!isAuthFailure(cause)) breaker?.connectionFailed()
      },
      ...extra
    })
  }

  private circuitChanged (upstream: UpstreamConfig, change: CircuitTransition): void {
    const fields = { upstream: upstream.name, failures: change.failures, cooldownMs: upstream.circuitBreaker.cooldownMs }
    if (change.to === 'open') this.log.warn(fields, change.from === 'half_open' ? 'circuit re-opened: the probe call failed' : 'circuit opened: upstream failed repeatedly; calls fail fast until a probe succeeds')
    else if (change.to === 'closed') this.log.info(fields, change.reason === 'reconnected' ? 'circuit closed: the upstream reconnected and initialized' : 'circuit closed: the probe call succeeded')
    this.listener.circuit?.(upstream.name, change.to)
  }

  /** The upstream's circuit breaker; undefined when it is disabled (or the upstream unknown). */
  breaker (name: string): CircuitBreaker | undefined {
    return this.breakers.get(name)
  }

  /** Whether the connection that serves this session's requests to `name` is connected now (opens none). */
  isConnected (name: string, sessionId: string): boolean {
    const config = this.configs.get(name)
    return config !== undefined && this.connections.get(keyFor(config, { id: sessionId }))?.state === 'ready'
  }

  start (): void {
    for (const connection of this.sharedConnections()) connection.start()
  }

  /** Resolves once every upstream's first connection attempt has succeeded or failed. */
  async settled (): Promise<void> {
    await Promise.all([...this.sharedConnections()].map(c => c.settled))
  }

  /** Resolves once each named upstream's first connection attempt has succeeded or failed. */
  async settledFor (names: readonly string[]): Promise<void> {
    await Promise.all(names.map(async name => await this.get(name)?.settled))
  }

  /** The shared connection of an upstream (the one that lists). */
  get (name: string): UpstreamConnection | undefined {
    const config = this.configs.get(name)
    return config === undefined ? undefined : this.connections.get(keyFor(config))
  }

  /** Each upstream's own connection (the one that lists), in the order the upstreams were added. */
  * sharedConnections (): Iterable<UpstreamConnection> {
    for (const config of this.configs.values()) {
      const connection = this.connections.get(keyFor(config))
      if (connection !== undefined) yield connection
    }
  }

  /** How many connections the pool holds now (every upstream's own and every session's). */
  get size (): number {
    return this.connections.size
  }

  /**
   * The connection that serves this session's requests to `name`, opened on first use for
   * `isolation: session`; throws SB_ERR_SESSION_LIMIT when the upstream's session limit is reached.
   */
  connectionFor (name: string, session: SessionRef): UpstreamConnection | undefined {
    const config = this.configs.get(name)
    if (config === undefined) return undefined
    const key = keyFor(config, session)
    const existing = this.connections.get(key)
    if (existing !== undefined || this.closed || config.isolation === 'shared') return existing
    let held = 0
    for (const connection of this.connections.values()) if (connection.name === name && connection.owner !== undefined) held++
    if (held >= config.maxSessionConnections) {
      throw new SwitchboardError('SB_ERR_SESSION_LIMIT', `upstream ${name} already serves ${held} sessions on their own connections (maxSessionConnections)`, { details: { limit: config.maxSessionConnections } })
    }
    // Its own state and reconnects are not the upstream's: only the shared connection reports them.
    const connection = this.open(config, { ...this.listener, lists: () => {}, state: () => {}, reconnect: () => {} }, {
      clientCapabilities: mirroredCapabilities(session.clientCapabilities),
      owner: session.id,
      ...(session.principal === undefined ? {} : { principal: session.principal })
    })
    this.connections.set(key, connection)
    connection.start()
    return connection
  }

  /** The connections opened for one session (isolation: session). */
  sessionConnections (sessionId: string): Iterable<UpstreamConnection> {
    const own: UpstreamConnection[] = []
    for (const config of this.configs.values()) {
      if (config.isolation === 'shared') continue
      const connection = this.connections.get(keyFor(config, { id: sessionId }))
      if (connection !== undefined) own.push(connection)
    }
    return own
  }

  /** Closes a session's own connections when the session ends. */
  async releaseSession (sessionId: string): Promise<void> {
    const own = [...this.sessionConnections(sessionId)]
    for (const connection of own) this.connections.delete(keyFor(connection.config, { id: sessionId }))
    await Promise.all(own.map(c => c.close()))
  }

  status (): UpstreamStatus[] {
    const sessions = new Map<string, { connections: number, inFlight: number }>()
    for (const connection of this.connections.values()) {
      if (connection.owner === undefined) continue
      const counted = sessions.get(connection.name) ?? { connections: 0, inFlight: 0 }
      counted.connections++
      counted.inFlight += connection.activeCalls.size
      sessions.set(connection.name, counted)
    }
    return [...this.sharedConnections()].map(c => {
      const sessionConnections = sessions.get(c.name)?.connections ?? 0
      const inFlight = c.activeCalls.size + (sessions.get(c.name)?.inFlight ?? 0)
      return {
        name: c.name,
        transport: c.config.transport,
        isolation: c.config.isolation,
        state: c.state,
        circuit: this.breakers.get(c.name)?.state ?? 'closed',
        sessionConnections,
        tools: c.toolCount,
        inFlight,
        reconnects: c.reconnects,
        ...(c.lastError === undefined ? {} : { lastError: c.lastError }),
        ...(c.serverInfo === undefined ? {} : { server: c.serverInfo }),
        ...(c.protocolVersion === undefined ? {} : { protocolVersion: c.protocolVersion })
      }
    })
  }

  async close (): Promise<void> {
    this.closed = true
    const all = [...this.connections.values(), ...this.retiring]
    // Every upstream's own connection stays in the map (status and get still find it, closed).
    for (const [key, connection] of this.connections) if (connection.owner !== undefined) this.connections.delete(key)
    await Promise.all(all.map(c => c.close()))
  }
}
