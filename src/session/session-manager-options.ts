import type { Logger } from 'pino'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import type { AccessView } from '../catalog/catalog-view.ts'
import type { EndpointSelection } from '../catalog/endpoint-selection.ts'
import type { Principal } from '../auth/principal.ts'
import type { PrincipalLimits } from '../limits/principal-limits.ts'
import type { AccessPolicy } from '../policy/access-policy.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { Session } from './session.ts'
import type { SessionMessage, SessionStore } from './session-store.ts'
import type { StandaloneStreams, UnheldOutcome } from './event-store.ts'

// What the session manager is built with: the catalog, policy and endpoints it serves views of, and
// the hooks the gateway gives it.

/** The endpoints sessions are opened on (the gateway's registry). */
export interface EndpointViews {
  /** The view a session on `route` gets from its principal's policy view; undefined when there is no such endpoint. */
  serve: (route: string | undefined, policy: AccessView) => { view: AccessView, selection: EndpointSelection | undefined } | undefined
  admit: (route: string | undefined, principal: Principal) => { ok: boolean }
}

export interface SessionManagerOptions {
  idleMs: number
  debounceMs: number
  catalogs: CatalogStore
  policy: AccessPolicy
  endpoints: EndpointViews
  metrics: Metrics
  log: Logger
  /** Called when a session is created. */
  onOpened?: (session: Session) => void
  /**
   * Called after a session is closed on this replica (releases its upstream connections and
   * subscriptions). `ended`: it ended everywhere (deleted, or never shared), so what is kept for it
   * elsewhere (stored stream events) can go too.
   */
  onClosed?: (session: Session, ended: boolean) => void
  /** Another replica changed the session's record (its log level, its subscriptions). */
  onUpdated?: (session: Session) => void
  /**
   * Another replica heard a log outside any call: this one hands it to the streams it holds.
   * False when this replica already had it (it heard the same log itself).
   */
  onLog?: (upstream: string, params: Record<string, unknown>) => boolean
  /** Where sessions live beyond this replica; memory (one process) by default. */
  store?: SessionStore
  /** Caps sessions per principal (limits.sessionsPerPrincipal); none when absent. */
  limits?: PrincipalLimits
  /** A message between replicas was handled here (kind, and whether this replica could act on it). */
  onRouted?: (kind: SessionMessage['kind'], outcome: 'delivered' | 'published' | 'ignored') => void
  /** Where a list change goes for a shared session whose standalone stream lives on a replica that died. */
  unheld?: StandaloneStreams
  onUnheld?: (outcome: UnheldOutcome) => void
}
