import { CATALOG_KINDS, type CatalogKind, type CatalogStore } from '../catalog/catalog-store.ts'
import { listedDigest } from '../catalog/catalog-view.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { StandaloneStreams, UnheldOutcome } from './event-store.ts'
import type { Session } from './session.ts'

export interface ListChangeRelayOptions {
  catalogs: CatalogStore
  metrics: Pick<Metrics, 'notifications'>
  /** The sessions this replica holds, at the moment of sending. */
  sessions: () => Iterable<Session>
  debounceMs: number
  /** With shared sessions: a change for a session whose stream is not here is stored for it if its replica died. */
  unheld?: StandaloneStreams
  onUnheld?: (outcome: UnheldOutcome) => void
}

/**
 * `list_changed` to the sessions whose visible list changed: one notification per kind per session
 * per burst of changes (debounced), and none to a session whose view is as it was. A session with
 * no stream to carry it is owed the notification until it opens one.
 */
export class ListChangeRelay {
  private readonly options: ListChangeRelayOptions
  private debounceMs: number
  private timer?: NodeJS.Timeout
  /** A reload is bringing upstreams up: changes gather until it is done. */
  private held?: Promise<void>
  private readonly pending = new Set<CatalogKind>()

  constructor (options: ListChangeRelayOptions) {
    this.options = options
    this.debounceMs = options.debounceMs
  }

  setDebounce (ms: number): void { this.debounceMs = ms }

  schedule (changed: Iterable<CatalogKind> = CATALOG_KINDS): void {
    for (const kind of changed) this.pending.add(kind)
    if (this.timer !== undefined || this.held !== undefined || this.pending.size === 0) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.send()
    }, this.debounceMs)
    this.timer.unref()
  }

  /**
   * Changes gather until `until` settles (the upstreams a reload added have made their first
   * attempt), so that a reload that removes some tools and adds others is one notification.
   */
  hold (until: Promise<unknown>): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    const hold = until.then(() => {}, () => {})
    this.held = hold
    void hold.then(() => {
      if (this.held !== hold) return
      this.held = undefined
      this.schedule([])
    })
  }

  close (): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }

  /**
   * A shared session with no stream here: its standalone stream may be on another replica (which
   * heard the change too and sends it), or on one that died, whose stream in the event store gets
   * the change once, for the client's resume on any replica. Either way the client is told, so it
   * is no longer owed here, unless a newer change came meanwhile.
   */
  private storeUnheld (session: Session, kind: CatalogKind, method: string, digest: string): void {
    const unheld = this.options.unheld
    if (unheld === undefined) return
    void unheld.appendUnheld(session.id, `${kind}\0${digest}`, { jsonrpc: '2.0', method }).then((outcome) => {
      this.options.onUnheld?.(outcome)
      if ((outcome === 'stored' || outcome === 'duplicate' || outcome === 'held') && session.seen[kind] === digest) session.owed.delete(kind)
    })
  }

  private send (): void {
    const kinds = CATALOG_KINDS.filter(k => this.pending.has(k))
    this.pending.clear()
    const { catalogs, metrics } = this.options
    for (const kind of kinds) {
      const method = `notifications/${kind}/list_changed`
      for (const session of this.options.sessions()) {
        const digest = listedDigest(catalogs, kind, session.view, session.searchesTools)
        if (session.seen[kind] === digest) continue
        session.seen[kind] = digest
        if (session.sendUnsolicited({ jsonrpc: '2.0', method })) {
          session.owed.delete(kind)
          metrics.notifications.inc({ method })
        } else {
          session.owed.add(kind)
          if (session.replica !== undefined) this.storeUnheld(session, kind, method, digest)
        }
      }
    }
  }
}
