import type { Principal } from '../auth/principal.ts'
import type { CircuitState } from './circuit-breaker.ts'
import type { UpstreamLists } from './upstream-lists.ts'
import type { ListingStore } from './listing-store.ts'
import type { SpawnReason } from './process-lifecycle.ts'
import type { SessionSlotLimit } from './session-slots.ts'

// The pool's shapes as others see them: its status rows, the session a connection is opened for, its hooks.

export interface UpstreamStatus {
  name: string
  transport: string
  isolation: string
  state: string
  circuit: CircuitState
  sessionConnections: number
  /** Connections of principals (isolation: principal) open now. */
  principalConnections: number
  /** Tools it lists now; calls running on it (its own connections of sessions included); reconnects of its current connection. */
  tools: number
  inFlight: number
  reconnects: number
  lastError?: string
  server?: unknown
  /** The revision spoken with it while connected (2026-07-28: stateless, found by server/discover); null otherwise. */
  protocolVersion: string | null
  /** Milliseconds since the epoch of its last change of state. */
  stateSince: number
  /** The stdio child's process id while it runs; null for other transports. */
  pid: number | null
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

/** What the gateway hears of the pool beyond each connection's listener. */
export interface PoolHooks {
  /**
   * An upstream with no credential of its own to list with (per-user OAuth without `auth.listing`)
   * was listed by a principal's connection: the catalog has these lists already; the hook may keep
   * them (the store) for replicas and restarts where no principal has connected yet.
   */
  onPrincipalLists?: (upstream: string, lists: UpstreamLists) => void
  /** How many principals' connections an upstream holds now (switchboard_principal_connections). */
  onPrincipalConnections?: (upstream: string, count: number) => void
  /** Where lazy upstreams' listings are kept (default: beside the pins, see listing-store.ts). */
  listings?: ListingStore
  /** Whether clients hold resource subscriptions on the upstream (it is not idle then). */
  hasSubscriptions?: (upstream: string) => boolean
  /** A stdio upstream's process was started after the gateway's start (switchboard_upstream_spawns_total). */
  onSpawn?: (upstream: string, reason: SpawnReason) => void
  /** Seconds from a start a call asked for to that call's answer. */
  onLazyStart?: (seconds: number) => void
  /** A session was refused its own connection, by the cap that refused it (switchboard_limit_refusals_total). */
  onSessionRefused?: (limit: SessionSlotLimit) => void
  /** stdio upstreams' own processes by state. */
  onProcesses?: (counts: Record<'running' | 'starting' | 'stopped', number>) => void
}
