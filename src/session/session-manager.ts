import { listedDigest } from '../catalog/catalog-view.ts'
import type { Principal } from '../auth/principal.ts'
import { type Slot, isLimitRefusal, principalKey } from '../limits/principal-limits.ts'
import { type JsonRpcResponse, type RequestId, isRecord } from '../protocol/json-rpc.ts'
import { ListChangeRelay } from './list-change-relay.ts'
import { applyRecord, gaugeLabels, recordOf } from './session-record.ts'
import type { SessionManagerOptions } from './session-manager-options.ts'
import { Session, type SessionInit } from './session.ts'
import { MemorySessionStore, type SessionMessage, type SessionRecord, type SessionStore } from './session-store.ts'

/** A stateless request is never told about list changes: it keeps no digests. */
const NO_DIGESTS = { tools: '', prompts: '', resources: '' } as const

export type { EndpointViews, SessionManagerOptions } from './session-manager-options.ts'

/**
 * The open downstream sessions: lookup, idle expiry, and the debounced relay of catalog changes
 * to every session whose visible list changed.
 */
export class SessionManager {
  private readonly sessions = new Map<string, Session>()
  /** The sessions of stateless (2026-07-28) requests in progress: not listed, counted or shared. */
  private readonly transient = new Map<string, Session>()
  /** The sessions of 2026-07-28 `subscriptions/listen` streams: they hear list changes too. */
  private readonly listening = new Map<string, Session>()
  /** Sessions other replicas may serve too (Streamable HTTP ones, with a shared store). */
  private readonly shared = new Set<string>()
  /** Loads under way, so concurrent first requests on this replica adopt a session once. */
  private readonly adopting = new Map<string, Promise<Session | undefined>>()
  /** Each held session's slot under limits.sessionsPerPrincipal, released when it is forgotten. */
  private readonly slots = new Map<string, Slot>()
  private readonly store: SessionStore
  private options: SessionManagerOptions
  private readonly sweeper: NodeJS.Timeout
  private readonly lists: ListChangeRelay
  private readonly unsubscribe: () => void

  constructor (options: SessionManagerOptions) {
    this.options = options
    this.sweeper = setInterval(() => { this.expireIdle() }, Math.max(1000, Math.min(options.idleMs / 4, 60_000)))
    this.sweeper.unref()
    this.lists = new ListChangeRelay({ catalogs: options.catalogs, metrics: options.metrics, sessions: () => this.heldAndListening(), debounceMs: options.debounceMs, unheld: options.unheld, onUnheld: options.onUnheld })
    this.unsubscribe = options.catalogs.onChange((changed) => { this.lists.schedule(changed) })
    this.store = options.store ?? new MemorySessionStore()
    this.store.onMessage((message) => { this.received(message) })
    this.store.onConnected(() => { this.restoreAll() })
  }

  /**
   * The store is back: sessions opened while it was away, or lost with its data, are written
   * again so that every replica can serve them. A record another replica wrote meanwhile wins.
   */
  private restoreAll (): void {
    for (const id of this.shared) {
      const session = this.sessions.get(id)
      if (session !== undefined) void this.store.restore(recordOf(session))
    }
  }

  /** A log an upstream sent outside any call, for the streams other replicas hold. */
  publishLog (upstream: string, params: Record<string, unknown>): void {
    this.store.publish({ kind: 'log', upstream, params })
    this.options.onRouted?.('log', 'published')
  }

  get size (): number { return this.sessions.size }

  /** Other replicas share the sessions (the store is shared). */
  get sharing (): boolean { return this.store.shared }

  /** `shareable`: other replicas may serve it (Streamable HTTP); a socket's session lives and dies with its socket. Throws SB_ERR_LIMIT_SESSIONS past limits.sessionsPerPrincipal. */
  create (init: Omit<SessionInit, 'digests' | 'log' | 'view' | 'selection' | 'replica'>, shareable = false): Session {
    const slot = this.options.limits?.acquire('sessionsPerPrincipal', principalKey(init.principal))
    if (isLimitRefusal(slot)) throw slot
    const session = this.open({ ...init, replica: shareable && this.store.shared ? this.store.replica : undefined }, slot)
    // The edge admitted the endpoint just before, in the same turn of the event loop.
    if (session === undefined) throw new Error(`no endpoint ${init.endpoint ?? '(root)'} to open a session on`)
    session.log.info({ client: session.clientInfo?.name, protocolVersion: session.protocolVersion, principal: init.principal.id }, 'session opened')
    this.options.onOpened?.(session)
    return session
  }

  /**
   * A session for one stateless (2026-07-28) request: what the principal may see on the endpoint,
   * and the request's cancellation, but not kept, counted or shared. undefined when the endpoint does
   * not exist (any more).
   */
  ephemeral (init: Omit<SessionInit, 'digests' | 'log' | 'view' | 'selection' | 'replica'>): Session | undefined {
    const served = this.options.endpoints.serve(init.endpoint, this.options.policy.viewFor(init.principal))
    if (served === undefined) return undefined
    const session = new Session({ ...init, view: served.view, selection: served.selection, digests: NO_DIGESTS, log: this.options.log })
    // Found by peek while its request runs, so what an upstream sends during it reaches its stream.
    this.transient.set(session.id, session)
    return session
  }

  /**
   * A session for one `subscriptions/listen` stream: it hears list changes (from the catalogs as they
   * are now) and resource updates like a held session, but is not listed, counted or shared.
   */
  listen (init: Omit<SessionInit, 'digests' | 'log' | 'view' | 'selection' | 'replica'>): Session | undefined {
    const served = this.serve(init.endpoint, init.principal)
    if (served === undefined) return undefined
    const session = new Session({ ...init, ...served, log: this.options.log })
    this.listening.set(session.id, session)
    return session
  }

  unlisten (session: Session): void {
    this.listening.delete(session.id)
  }

  private * heldAndListening (): Generator<Session> {
    yield * this.sessions.values()
    yield * this.listening.values()
  }

  /** The end of a stateless request: its session is forgotten. */
  release (session: Session): void {
    this.transient.delete(session.id)
  }

  /** What a principal sees on an endpoint, and the digests of its lists now; undefined: no such endpoint. */
  private serve (endpoint: string | undefined, principal: Principal): Pick<SessionInit, 'view' | 'selection' | 'digests'> | undefined {
    const { catalogs } = this.options
    const served = this.options.endpoints.serve(endpoint, this.options.policy.viewFor(principal))
    if (served === undefined) return undefined
    const { view, selection } = served
    const searches = selection?.searches === true
    return { view, selection, digests: { tools: listedDigest(catalogs, 'tools', view, searches), prompts: listedDigest(catalogs, 'prompts', view, searches), resources: listedDigest(catalogs, 'resources', view, searches) } }
  }

  /** undefined when the session's endpoint does not exist (any more); `slot` (its place under limits.sessionsPerPrincipal) is held until it is forgotten. */
  private open (init: Omit<SessionInit, 'digests' | 'log' | 'view' | 'selection'>, slot: Slot | undefined): Session | undefined {
    const served = this.serve(init.endpoint, init.principal)
    if (served === undefined) {
      slot?.release()
      return undefined
    }
    const session = new Session({ ...init, ...served, log: this.options.log })
    this.sessions.set(session.id, session)
    if (slot !== undefined) this.slots.set(session.id, slot)
    if (init.replica !== undefined) this.shared.add(session.id)
    this.options.metrics.sessions.inc(gaugeLabels(session))
    return session
  }

  /**
   * A reload: every session's view follows the new policy at once, and each session whose visible
   * lists changed (by the policy, or by the catalog the same reload changed) hears so once.
   */
  reconfigure (changes: Pick<SessionManagerOptions, 'policy' | 'debounceMs'>, until?: Promise<unknown>): void {
    this.options = { ...this.options, ...changes }
    const { endpoints } = this.options
    for (const session of [...this.sessions.values()]) {
      const served = endpoints.serve(session.endpoint, changes.policy.viewFor(session.principal))
      if (served === undefined) this.forget(session.id, 'its endpoint was removed')
      else if (!endpoints.admit(session.endpoint, session.principal).ok) this.forget(session.id, 'its principal may no longer open its endpoint')
      else {
        session.view = served.view
        session.selection = served.selection
      }
    }
    this.lists.setDebounce(changes.debounceMs)
    if (until !== undefined) this.lists.hold(until)
    this.lists.schedule()
  }

  /** Writes a shareable session to the store, so every replica can serve it from its next request on. */
  async share (session: Session): Promise<void> {
    if (this.shared.has(session.id)) await this.store.save(recordOf(session))
  }

  /** The session's record changed here (log level, subscriptions): store it and tell the replicas holding it. */
  saveState (session: Session): void {
    if (!this.shared.has(session.id)) return
    void this.store.save(recordOf(session)).then(() => { this.store.publish({ kind: 'updated', sessionId: session.id }) })
  }

  get (id: string): Session | undefined {
    const session = this.sessions.get(id)
    if (session !== undefined) {
      session.touch()
      if (this.shared.has(id)) this.store.touch(id)
    }
    return session
  }

  /**
   * The session with this id, from this replica or, with a shared store, from the store: a session
   * another replica opened is adopted on its first request here. Synchronous when known here.
   */
  resolve (id: string): Session | undefined | Promise<Session | undefined> {
    const local = this.get(id)
    if (local !== undefined || !this.store.shared) return local
    let pending = this.adopting.get(id)
    if (pending === undefined) {
      // Rejects (SB_ERR_SESSION_STORE_UNAVAILABLE) when the store cannot answer: not "unknown".
      pending = this.store.load(id).then((record) => {
        if (record === undefined) return undefined
        return this.sessions.get(id) ?? this.adopt(record)
      }).finally(() => { this.adopting.delete(id) })
      this.adopting.set(id, pending)
    }
    return pending
  }

  private adopt (record: SessionRecord): Session | undefined {
    const session = this.open({
      id: record.id,
      transport: record.transport,
      protocolVersion: record.protocolVersion,
      clientInfo: record.clientInfo,
      clientCapabilities: record.clientCapabilities,
      principal: record.principal,
      endpoint: record.endpoint,
      replica: this.store.replica
    }, this.options.limits?.hold('sessionsPerPrincipal', principalKey(record.principal))) // opened elsewhere: counted here, never refused
    if (session === undefined) return undefined
    applyRecord(session, record)
    session.log.info({ principal: record.principal.id }, 'session adopted from the shared store')
    this.options.onOpened?.(session)
    return session
  }

  /**
   * notifications/cancelled: stops the request here or, when it is not running here and the
   * session is shared, wherever it runs.
   */
  cancel (session: Session, requestId: RequestId, reason: string): void {
    if (session.cancel(requestId, reason) || !this.shared.has(session.id)) return
    this.store.publish({ kind: 'cancel', sessionId: session.id, requestId, reason })
    this.options.onRouted?.('cancel', 'published')
  }

  /** The client's reply to a request of ours; one sent by another replica goes back to it. False: nobody asked. */
  answer (session: Session, response: JsonRpcResponse): boolean {
    if (session.resolveClientRequest(response)) return true
    const owner = typeof response.id === 'string' ? response.id.slice(0, response.id.lastIndexOf('.')) : ''
    if (!this.shared.has(session.id) || owner === '' || owner === this.store.replica) return false
    this.store.publish({ kind: 'response', sessionId: session.id, response }, owner)
    this.options.onRouted?.('response', 'published')
    return true
  }

  private received (message: SessionMessage): void {
    // The catalog's, not a session's: the gateway's shared listings hear it.
    if (message.kind === 'listing') return
    if (message.kind === 'log') {
      const handled = typeof message.upstream === 'string' && isRecord(message.params) && this.options.onLog?.(message.upstream, message.params) === true
      this.options.onRouted?.('log', handled ? 'delivered' : 'ignored')
      return
    }
    const session = this.sessions.get(message.sessionId)
    let acted = false
    if (session !== undefined) {
      switch (message.kind) {
        case 'removed':
          acted = this.forget(session.id, 'deleted on another replica', true)
          break
        case 'cancel':
          acted = session.cancel(message.requestId, message.reason)
          break
        case 'response':
          acted = session.resolveClientRequest(message.response)
          break
        case 'updated':
          acted = true
          void this.store.load(session.id).then((record) => {
            if (record === undefined || session.isClosed) return
            applyRecord(session, record)
            this.options.onUpdated?.(session)
          }, () => {})
          break
      }
    }
    this.options.onRouted?.(message.kind, acted ? 'delivered' : 'ignored')
  }

  /** Looks a session up without counting it as activity (messages from upstreams). */
  peek (id: string): Session | undefined {
    return this.sessions.get(id) ?? this.transient.get(id) ?? this.listening.get(id)
  }

  all (): IterableIterator<Session> {
    return this.sessions.values()
  }

  /** Ends the session everywhere (DELETE, a socket's end). */
  delete (id: string, reason: string): boolean {
    if (this.shared.has(id)) this.store.remove(id)
    return this.forget(id, reason, true)
  }

  /** Ends the session on this replica only; other replicas, and the store, keep it. */
  forget (id: string, reason: string, ended = !this.shared.has(id)): boolean {
    const session = this.sessions.get(id)
    if (session === undefined) return false
    this.sessions.delete(id)
    this.shared.delete(id)
    this.slots.get(id)?.release()
    this.slots.delete(id)
    session.close()
    this.options.metrics.sessions.dec(gaugeLabels(session))
    session.log.info({ reason }, 'session closed')
    this.options.onClosed?.(session, ended)
    return true
  }

  /** Open sessions on this replica, by transport and by principal id (no secrets). */
  counts (): { total: number, byTransport: Record<string, number>, byPrincipal: Record<string, number> } {
    const byTransport = new Map<string, number>()
    const byPrincipal = new Map<string, number>()
    for (const s of this.sessions.values()) {
      byTransport.set(s.transport, (byTransport.get(s.transport) ?? 0) + 1)
      byPrincipal.set(s.principal.id, (byPrincipal.get(s.principal.id) ?? 0) + 1)
    }
    return { total: this.sessions.size, byTransport: Object.fromEntries(byTransport), byPrincipal: Object.fromEntries(byPrincipal) }
  }

  inFlightCount (): number {
    let n = 0
    for (const s of this.sessions.values()) n += s.inFlightCount
    return n
  }

  cancelAll (reason: string): void {
    for (const s of this.sessions.values()) s.cancelAll(reason)
  }

  private expireIdle (): void {
    const cutoff = Date.now() - this.options.idleMs
    for (const session of [...this.sessions.values()]) {
      // An open stream whose keepalives still get through is a live client.
      // A shared session may be in use on another replica: the store's TTL expires it everywhere.
      if (session.lastActivity < cutoff && !session.hasStream && session.inFlightCount === 0) this.forget(session.id, 'idle')
    }
  }

  /** Shutdown: sessions other replicas can serve stay in the store; the others end. */
  closeAll (reason: string): void {
    for (const id of [...this.sessions.keys()]) this.forget(id, reason)
  }

  close (): void {
    clearInterval(this.sweeper)
    this.lists.close()
    this.unsubscribe()
    this.closeAll('gateway shutting down')
  }
}
