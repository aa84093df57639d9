import { listsThroughUsers } from '../credentials/lists-through-users.ts'
import type { Logger } from 'pino'
import { ANONYMOUS, type Principal } from '../auth/principal.ts'
import type { ConfigDiff } from '../config/config-diff.ts'
import type { GatewayConfig, UpstreamConfig } from '../config/schema.ts'
import type { CredentialProvider } from '../credentials/credential-provider.ts'
import { CredentialProviders } from '../credentials/credential-providers.ts'
import { CircuitBreaker, type CircuitTransition } from './circuit-breaker.ts'
import { isCredentialFailure } from './credential-failure.ts'
import { type ConnectionKey, type ConnectionRef, keyFor } from './connection-key.ts'
import { IdleConnections } from './idle-connections.ts'
import { UpstreamConnection, type UpstreamListener } from './upstream-connection.ts'
import { LISTING_CLIENT_CAPABILITIES, SHARED_CLIENT_CAPABILITIES, mirroredCapabilities } from './client-capabilities.ts'
import type { PoolHooks, SessionRef, UpstreamStatus } from './pool-types.ts'
import { ProcessLifecycle } from './process-lifecycle.ts'
import { createListingStore } from './listing-store.ts'
import { SessionSlots, sessionLimit } from './session-slots.ts'

export { LISTING_CLIENT_CAPABILITIES, SHARED_CLIENT_CAPABILITIES, mirroredCapabilities } from './client-capabilities.ts'
export type { PoolHooks, SessionRef, UpstreamStatus } from './pool-types.ts'

/** Per-user OAuth without a listing credential: its own connection could only be refused, so it is never started. */
const awaitsUser = listsThroughUsers

/**
 * Every upstream's managed connection, plus the per-session connections of upstreams configured
 * with `isolation: session` and the per-principal ones of `isolation: principal`, in one map by
 * ConnectionKey (see keyFor). Starting never blocks on a slow or dead upstream.
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
  private readonly hooks: PoolHooks
  /** Principals' connections, closed once idle. */
  private readonly idle = new IdleConnections((connection) => { void this.dismiss(connection) })
  /** Per upstream that awaits its users: the principal's connection whose lists the catalog shows. */
  private readonly listers = new Map<string, UpstreamConnection>()
  /** stdio upstreams' processes: lazy start, idle stop, maxRunning. */
  private readonly lifecycle: ProcessLifecycle
  /** Whether a session may open its own connection (process) now. */
  private readonly slots: SessionSlots
  private closed = false

  constructor (config: GatewayConfig, log: Logger, listener: UpstreamListener, clientInfo: { name: string, version: string }, baseEnv: Readonly<Record<string, string | undefined>>, credentials = new CredentialProviders(), hooks: PoolHooks = {}) {
    this.config = config
    this.credentials = credentials
    this.hooks = hooks
    this.log = log
    this.listener = listener
    this.clientInfo = clientInfo
    this.baseEnv = baseEnv
    this.lifecycle = new ProcessLifecycle({
      defaults: () => this.config.upstreamDefaults,
      store: hooks.listings ?? createListingStore(config.pinning, config.redis),
      log: log.child({ component: 'processes' }),
      held: (c) => (hooks.hasSubscriptions?.(c.name) ?? false) || this.count(c.name, 'session') + this.count(c.name, 'principal') > 0,
      sessionProcesses: () => this.slots.processes(),
      ...(hooks.onSpawn === undefined ? {} : { onSpawn: hooks.onSpawn }),
      ...(hooks.onLazyStart === undefined ? {} : { onLazyStart: hooks.onLazyStart }),
      ...(hooks.onProcesses === undefined ? {} : { onProcesses: hooks.onProcesses })
    })
    this.slots = new SessionSlots(() => [...this.connections.values(), ...this.retiring].filter(c => c.scope === 'session'), () => this.config, this.lifecycle, hooks.onSessionRefused)
    for (const upstream of config.upstreams) this.add(upstream)
  }

  /** Registers an upstream and opens (without starting) its shared connection. */
  private add (upstream: UpstreamConfig): UpstreamConnection {
    this.configs.set(upstream.name, upstream)
    if (upstream.circuitBreaker.enabled) {
      this.breakers.set(upstream.name, new CircuitBreaker(upstream.circuitBreaker, { onTransition: (change) => { this.circuitChanged(upstream, change) } }))
    }
    const stdio = upstream.transport === 'stdio'
    const connection: UpstreamConnection = this.open(upstream, stdio ? this.lifecycle.listenerFor(this.listener, () => connection) : this.listener, {
      // A session-isolated upstream's shared connection only lists, as a client with every capability would see it.
      clientCapabilities: upstream.isolation === 'session' ? { ...LISTING_CLIENT_CAPABILITIES } : { ...SHARED_CLIENT_CAPABILITIES },
      listing: true,
      ...(stdio ? { onCallEnd: (c: UpstreamConnection) => { this.lifecycle.callEnded(c) }, onDemand: (c: UpstreamConnection) => { this.lifecycle.demand(c) } } : {})
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
      this.idle.forget(connection)
      this.lifecycle.forget(connection)
      retiring.push(connection)
    }
    this.configs.delete(name)
    this.breakers.delete(name)
    this.listers.delete(name)
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
      if (!this.closed) this.begin(connection)
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

  /** An upstream's own connection starts, unless it awaits its users (then it says so). */
  private begin (connection: UpstreamConnection): void {
    if (awaitsUser(connection.config)) connection.park()
    else if (connection.config.transport === 'stdio') this.lifecycle.begin(connection, (lists) => { this.listener.lists(connection.name, lists) })
    else connection.start()
  }

  private open (upstream: UpstreamConfig, listener: UpstreamListener, extra: { clientCapabilities: Record<string, unknown>, listing: boolean, owner?: string, principal?: Principal, onCallEnd?: (c: UpstreamConnection) => void, onDemand?: (c: UpstreamConnection) => void }): UpstreamConnection {
    const fields = extra.owner !== undefined ? { upstream: upstream.name, session: extra.owner.slice(0, 8) } : extra.principal !== undefined ? { upstream: upstream.name, principal: extra.principal.id } : { upstream: upstream.name }
    const connection: UpstreamConnection = new UpstreamConnection({
      config: upstream,
      log: this.log.child(fields),
      listener,
      killAfterMs: this.config.shutdown.killAfterMs,
      baseEnv: this.baseEnv,
      clientInfo: this.clientInfo,
      healthCheckMs: upstream.healthCheckMs,
      credentials: this.credentials.for(upstream),
      limits: this.lifecycle.settingsOf(upstream).limits,
      // Any of its connections speaks for the upstream: a restart that works closes the circuit.
      // A credential's failure says nothing of the upstream's health (a caller's connection does
      // not even report it: it closes, see onUnusable).
      onHealth: (healthy, cause) => {
        const breaker = this.breakers.get(upstream.name)
        if (healthy) breaker?.recovered()
        else if (!isCredentialFailure(cause)) {
          this.lifecycle.lost(connection, cause)
          breaker?.connectionFailed()
        }
      },
      onUnusable: (c) => { this.forget(c) },
      ...extra
    })
    return connection
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

  /** Where the upstream's credentials come from (its auth type's provider); undefined for an unknown upstream. */
  credentialsFor (name: string): CredentialProvider | undefined {
    const config = this.configs.get(name)
    return config === undefined ? undefined : this.credentials.for(config)
  }

  /** Whether the connection that serves this session's (or its principal's) requests to `name` is connected now (opens none). */
  isConnected (name: string, ref: ConnectionRef): boolean {
    const config = this.configs.get(name)
    return config !== undefined && this.connections.get(keyFor(config, ref))?.state === 'ready'
  }

  start (): void {
    for (const connection of this.sharedConnections()) this.begin(connection)
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
   * `isolation: session` and `principal`; throws SB_ERR_SESSION_LIMIT when a limit is reached (see
   * session-slots.ts, or maxPrincipalConnections with every principal's connection busy).
   */
  connectionFor (name: string, session: SessionRef): UpstreamConnection | undefined {
    const config = this.configs.get(name)
    if (config === undefined) return undefined
    const key = keyFor(config, session)
    const existing = this.connections.get(key)
    if (existing !== undefined || this.closed || config.isolation === 'shared') return existing
    const connection = config.isolation === 'principal' ? this.openForPrincipal(config, session) : this.openForSession(config, session)
    this.connections.set(key, connection)
    connection.start()
    if (connection.scope === 'principal') this.hooks.onPrincipalConnections?.(name, this.count(name, 'principal'))
    return connection
  }

  private count (name: string, scope: UpstreamConnection['scope']): number {
    let held = 0
    for (const connection of this.connections.values()) if (connection.name === name && connection.scope === scope) held++
    return held
  }

  private openForSession (config: UpstreamConfig, session: SessionRef): UpstreamConnection {
    this.slots.claim(config, session.principal)
    const connection: UpstreamConnection = this.open(config, this.ownListener(config, () => connection), {
      clientCapabilities: mirroredCapabilities(session.clientCapabilities),
      listing: awaitsUser(config),
      owner: session.id,
      ...(session.principal === undefined ? {} : { principal: session.principal })
    })
    return connection
  }

  /**
   * A principal's connection, shared by all their sessions (so it declares what a shared one does,
   * never roots), kept past their end until idle for `idleCloseMs`. When the upstream holds
   * maxPrincipalConnections, the one idle longest is closed to make room.
   */
  private openForPrincipal (config: UpstreamConfig, session: SessionRef): UpstreamConnection {
    const held = [...this.connections.values()].filter(c => c.name === config.name && c.scope === 'principal')
    if (held.length >= config.maxPrincipalConnections) {
      const idlest = this.idle.idlest(held)
      if (idlest === undefined) throw sessionLimit(config.name, 'maxPrincipalConnections', config.maxPrincipalConnections, `already serves ${held.length} principals on their own connections, every one with a call in flight (maxPrincipalConnections)`)
      void this.dismiss(idlest)
    }
    const connection: UpstreamConnection = this.open(config, this.ownListener(config, () => connection), {
      clientCapabilities: { ...SHARED_CLIENT_CAPABILITIES },
      listing: awaitsUser(config),
      principal: session.principal ?? ANONYMOUS,
      onCallEnd: (c) => { this.idle.callEnded(c) }
    })
    this.idle.watch(connection, config.idleCloseMs)
    return connection
  }

  /**
   * The listener of a session's or principal's connection: its state and reconnects are not the
   * upstream's, nor are its lists, unless the upstream awaits its users: then the first of them to
   * list speaks for the catalog, for as long as it is open.
   */
  private ownListener (config: UpstreamConfig, self: () => UpstreamConnection): UpstreamListener {
    const quiet = (): void => {}
    if (!awaitsUser(config)) return { ...this.listener, lists: quiet, state: quiet, reconnect: quiet }
    const name = config.name
    return {
      ...this.listener,
      state: quiet,
      reconnect: quiet,
      lists: (_upstream, lists) => {
        if (lists === undefined || this.configs.get(name) !== config) return
        const lister = this.listers.get(name)
        if (lister !== undefined && lister !== self() && !lister.ended) return
        this.listers.set(name, self())
        this.listener.lists(name, lists)
        this.hooks.onPrincipalLists?.(name, lists)
      }
    }
  }

  /** Closes a principal's connection (idle, or making room): the next call of theirs opens another. */
  private async dismiss (connection: UpstreamConnection): Promise<void> {
    this.forget(connection)
    await connection.close()
  }

  /** Lets go of a caller's connection (it closes, or closed itself): the next call of theirs opens another. */
  private forget (connection: UpstreamConnection): void {
    this.idle.forget(connection)
    for (const [key, held] of this.connections) {
      if (held !== connection) continue
      this.connections.delete(key)
      if (connection.scope === 'principal') this.hooks.onPrincipalConnections?.(connection.name, this.count(connection.name, 'principal'))
      if (connection.scope === 'session') this.lifecycle.slotFreed()
      break
    }
  }

  /** Closes `principal`'s own connection to `name` (their grant was replaced: an upstream may bind its session to the account). */
  async dropPrincipal (name: string, principal: Principal): Promise<void> {
    const config = this.configs.get(name)
    const connection = config?.isolation === 'principal' ? this.connections.get(keyFor(config, { id: '', principal })) : undefined
    if (connection !== undefined) await this.dismiss(connection)
  }

  /** The connections opened for one session (isolation: session; a principal's outlive it). */
  sessionConnections (sessionId: string): Iterable<UpstreamConnection> {
    const own: UpstreamConnection[] = []
    for (const config of this.configs.values()) {
      if (config.isolation !== 'session') continue
      const connection = this.connections.get(keyFor(config, { id: sessionId }))
      if (connection !== undefined) own.push(connection)
    }
    return own
  }

  /** Closes a session's own connections when the session ends. */
  async releaseSession (sessionId: string): Promise<void> {
    const own = [...this.sessionConnections(sessionId)]
    for (const connection of own) this.connections.delete(keyFor(connection.config, { id: sessionId }))
    if (own.length > 0) this.lifecycle.slotFreed()
    await Promise.all(own.map(c => c.close()))
  }

  status (): UpstreamStatus[] {
    const own = new Map<string, { session: number, principal: number, inFlight: number }>()
    for (const connection of this.connections.values()) {
      if (connection.scope === 'upstream') continue
      const counted = own.get(connection.name) ?? { session: 0, principal: 0, inFlight: 0 }
      counted[connection.scope]++
      counted.inFlight += connection.activeCalls.size
      own.set(connection.name, counted)
    }
    return [...this.sharedConnections()].map(c => {
      const counted = own.get(c.name)
      return {
        name: c.name,
        transport: c.config.transport,
        isolation: c.config.isolation,
        state: c.state,
        circuit: this.breakers.get(c.name)?.state ?? 'closed',
        sessionConnections: counted?.session ?? 0,
        principalConnections: counted?.principal ?? 0,
        tools: c.toolCount,
        inFlight: c.activeCalls.size + (counted?.inFlight ?? 0),
        reconnects: c.reconnects,
        ...(c.lastError === undefined ? {} : { lastError: c.lastError }),
        ...(c.serverInfo === undefined ? {} : { server: c.serverInfo }),
        protocolVersion: c.state === 'ready' ? c.protocolVersion ?? null : null,
        stateSince: c.stateSince,
        pid: c.pid ?? null
      }
    })
  }

  /** How many stdio upstreams' own processes run now (connecting or ready). */
  get running (): number {
    return this.lifecycle.running
  }

  async close (): Promise<void> {
    this.closed = true
    this.idle.clear()
    const lifecycle = this.lifecycle.close()
    const all = [...this.connections.values(), ...this.retiring]
    // Every upstream's own connection stays in the map (status and get still find it, closed).
    for (const [key, connection] of this.connections) if (connection.scope !== 'upstream') this.connections.delete(key)
    await Promise.all([...all.map(c => c.close()), lifecycle])
  }
}
