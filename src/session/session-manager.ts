import type { Logger } from 'pino'
import { CATALOG_KINDS, type CatalogKind, type CatalogStore } from '../catalog/catalog-store.ts'
import { visibleDigest } from '../catalog/catalog-view.ts'
import type { AccessPolicy } from '../policy/access-policy.ts'
import type { Metrics } from '../observability/metrics.ts'
import { Session, type SessionInit } from './session.ts'

export interface SessionManagerOptions {
  idleMs: number
  debounceMs: number
  catalogs: CatalogStore
  policy: AccessPolicy
  metrics: Metrics
  log: Logger
  /** Called when a session is created. */
  onOpened?: (session: Session) => void
  /** Called after a session is closed and forgotten (releases its upstream connections and subscriptions). */
  onClosed?: (session: Session) => void
}

/**
 * The open downstream sessions: lookup, idle expiry, and the debounced relay of catalog changes
 * to every session whose visible list changed.
 */
export class SessionManager {
  private readonly sessions = new Map<string, Session>()
  private readonly options: SessionManagerOptions
  private readonly sweeper: NodeJS.Timeout
  private relayTimer?: NodeJS.Timeout
  private readonly pendingKinds = new Set<CatalogKind>()
  private readonly unsubscribe: () => void

  constructor (options: SessionManagerOptions) {
    this.options = options
    this.sweeper = setInterval(() => { this.expireIdle() }, Math.max(1000, Math.min(options.idleMs / 4, 60_000)))
    this.sweeper.unref()
    this.unsubscribe = options.catalogs.onChange((changed) => { this.scheduleRelay(changed) })
  }

  get size (): number { return this.sessions.size }

  create (init: Omit<SessionInit, 'digests' | 'log' | 'view'>): Session {
    const { catalogs } = this.options
    const view = this.options.policy.viewFor(init.principal)
    const digests = { tools: visibleDigest(catalogs, 'tools', view), prompts: visibleDigest(catalogs, 'prompts', view), resources: visibleDigest(catalogs, 'resources', view) }
    const session = new Session({ ...init, view, digests, log: this.options.log })
    this.sessions.set(session.id, session)
    this.options.metrics.sessions.inc({ transport: session.transport })
    session.log.info({ client: session.clientInfo?.name, protocolVersion: session.protocolVersion, principal: init.principal.id }, 'session opened')
    this.options.onOpened?.(session)
    return session
  }

  get (id: string): Session | undefined {
    const session = this.sessions.get(id)
    session?.touch()
    return session
  }

  /** Looks a session up without counting it as activity (messages from upstreams). */
  peek (id: string): Session | undefined {
    return this.sessions.get(id)
  }

  all (): IterableIterator<Session> {
    return this.sessions.values()
  }

  delete (id: string, reason: string): boolean {
    const session = this.sessions.get(id)
    if (session === undefined) return false
    this.sessions.delete(id)
    session.close()
    this.options.metrics.sessions.dec({ transport: session.transport })
    session.log.info({ reason }, 'session closed')
    this.options.onClosed?.(session)
    return true
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
      if (session.lastActivity < cutoff && !session.hasStream && session.inFlightCount === 0) this.delete(session.id, 'idle')
    }
  }

  private scheduleRelay (changed: ReadonlySet<CatalogKind>): void {
    for (const kind of changed) this.pendingKinds.add(kind)
    if (this.relayTimer !== undefined) return
    this.relayTimer = setTimeout(() => {
      this.relayTimer = undefined
      this.relay()
    }, this.options.debounceMs)
    this.relayTimer.unref()
  }

  /** One notification per kind per session per burst, and only to sessions whose visible list changed. */
  private relay (): void {
    const kinds = CATALOG_KINDS.filter(k => this.pendingKinds.has(k))
    this.pendingKinds.clear()
    for (const kind of kinds) {
      const method = `notifications/${kind}/list_changed`
      for (const session of this.sessions.values()) {
        const digest = visibleDigest(this.options.catalogs, kind, session.view)
        if (session.seen[kind] === digest) continue
        session.seen[kind] = digest
        if (session.sendUnsolicited({ jsonrpc: '2.0', method })) {
          session.owed.delete(kind)
          this.options.metrics.notifications.inc({ method })
        } else {
          session.owed.add(kind)
        }
      }
    }
  }

  closeAll (reason: string): void {
    for (const id of [...this.sessions.keys()]) this.delete(id, reason)
  }

  close (): void {
    clearInterval(this.sweeper)
    if (this.relayTimer !== undefined) clearTimeout(this.relayTimer)
    this.unsubscribe()
    this.closeAll('gateway shutting down')
  }
}
