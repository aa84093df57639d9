import type { OperatorApprovals } from '../approval/pending-approvals.ts'
import type { GatewayConfig } from '../config/schema.ts'
import type { ConnectFlows } from '../credentials/connect-flows.ts'
import type { SessionManager } from '../session/session-manager.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import type { ReloadResult } from './reload-result.ts'
import type { Reload } from './reloader.ts'
import type { ToolPins } from '../trust/tool-pins.ts'
import type { CallFeed } from '../observability/call-feed.ts'
import type { AdminCallStats, AdminCatalogView, AdminPrincipalView, AdminSessionList, AdminToolCall, AdminToolCallResult } from './console-views.ts'
import { consoleMembers, type ConsoleServiceDeps } from './console-service.ts'
import { pinsView, type ApproveOutcome, type PinSelection, type UpstreamPinsView } from '../trust/pin-approval.ts'

export interface AdminUpstreamView {
  name: string
  state: string
  transport: string
  isolation: string
  tools: number
  inFlight: number
  reconnects: number
  lastError?: string
  circuit: string
  sessionConnections: number
  principalConnections: number
  /** The revision the upstream negotiated, while connected; null otherwise. */
  protocolVersion: string | null
  /** Milliseconds since the epoch of the last change of state. */
  stateSince: number
  /** The stdio child's process id while it runs; null otherwise. */
  pid: number | null
}

/** The pins as `switchboard pins list` shows them, with the definition scan's findings. */
export interface AdminPinsView { pinning: string, scanning: string, store?: string, upstreams: UpstreamPinsView[] }

export interface AdminSessionsView { total: number, byTransport: Record<string, number>, byPrincipal: Record<string, number> }

/** Upstream grants, counted per upstream and type; principal keys only when asked for, tokens never. */
export interface AdminConnectionsView {
  upstreams: Array<{ upstream: string, type: string, connections: number, principals?: string[] }>
}

/**
 * What an operator may see and do, whatever surface asks (the admin API today, a console next).
 * Knows nothing about HTTP; authentication is the surface's.
 */
export interface AdminService {
  /** Reads, validates and applies the config file again. */
  reload: () => Promise<ReloadResult>
  /** Reads and validates the config file and says what a reload would change, applying nothing. Optional: a surface without it answers 404. */
  previewReload?: () => Promise<ReloadResult>
  /** The config in force, secrets included: a surface shows it only through `redactConfig`. */
  config: () => GatewayConfig
  upstreams: () => AdminUpstreamView[]
  /** The sessions this replica holds. */
  sessions: () => AdminSessionsView
  /** A new connection takes over from the upstream's current one. false: no such upstream. */
  reconnect: (name: string) => boolean
  /** The grants users hold at upstreams (per-user OAuth and the like); `principals`: list their principal keys too. */
  connections: (options: { principals: boolean }) => Promise<AdminConnectionsView>
  /** Revokes (RFC 7009 where offered) and forgets one principal's grant. false: there was none. */
  revokeConnection: (upstream: string, principal: string) => Promise<boolean>
  /** The calls waiting for an operator's approval (effect ask, via operator); absent: none can wait. */
  approvals?: OperatorApprovals | undefined
  /** The pins (and scan holds) of the configured upstreams, or of `only`. Optional: a surface without pins answers 404. */
  pins?: (only?: readonly string[]) => Promise<AdminPinsView>
  /** Approves pending definitions as `switchboard pins approve` does; undefined: pinning and scanning are both off. */
  approvePins?: (selection: PinSelection) => Promise<ApproveOutcome | undefined>
  /** The sessions one by one (GET /admin/sessions), at most `limit`. */
  sessionList?: (limit: number) => AdminSessionList
  /** Ends the session `ref` names (AdminSessionItem.ref) as a DELETE from its client would. false: none. */
  endSession?: (ref: string) => boolean
  /** The catalog as a client on `endpoint` sees it (as `principal`, when given), ranked by `query` when given. */
  catalog?: (options: { endpoint: string | null, principal: string | null, query: string | null }) => Promise<AdminCatalogView>
  /** The principals a console may call as. */
  principals?: () => AdminPrincipalView[]
  /** A tools/call as a chosen principal through the gateway's own call path; `signal` cancels it. */
  callTool?: (call: AdminToolCall, signal?: AbortSignal) => Promise<AdminToolCallResult>
  /** Calls per minute and p95 per upstream over the last 15 minutes. */
  callStats?: () => AdminCallStats
  /** Every finished call as it ends (the live stream). */
  calls?: CallFeed
}

export interface AdminServiceDeps {
  config: () => GatewayConfig
  pool: Pick<UpstreamPool, 'status' | 'reconnect'>
  sessions: Pick<SessionManager, 'counts'>
  reload: Reload
  /** The connect flow; absent: no grants to show or revoke. */
  connections?: Pick<ConnectFlows, 'list' | 'disconnect'> | undefined
  /** The calls waiting for an operator's approval. */
  approvals?: OperatorApprovals | undefined
  /** The pin book; absent when pinning and scanning are both off. */
  pins?: Pick<ToolPins, 'listing' | 'approve' | 'where'> | undefined
  /** What the console's members need (sessions one by one, catalog, calls as a principal, statistics); absent: they stay undefined. */
  console?: ConsoleServiceDeps | undefined
}

async function connectionsView (flows: AdminServiceDeps['connections'], withPrincipals: boolean): Promise<AdminConnectionsView> {
  const grants = flows === undefined ? [] : await flows.list()
  const groups = new Map<string, { upstream: string, type: string, principals: string[] }>()
  for (const grant of grants) {
    const id = `${grant.key.upstream}\u0000${grant.type}`
    let group = groups.get(id)
    if (group === undefined) {
      group = { upstream: grant.key.upstream, type: grant.type, principals: [] }
      groups.set(id, group)
    }
    group.principals.push(grant.key.principal)
  }
  const upstreams = [...groups.values()]
    .sort((a, b) => a.upstream.localeCompare(b.upstream) || a.type.localeCompare(b.type))
    .map(g => withPrincipals ? { upstream: g.upstream, type: g.type, connections: g.principals.length, principals: g.principals.sort() } : { upstream: g.upstream, type: g.type, connections: g.principals.length })
  return { upstreams }
}

export function createAdminService (deps: AdminServiceDeps): AdminService {
  const { pool, sessions, connections } = deps
  return {
    reload: async () => await deps.reload('admin'),
    previewReload: async () => await deps.reload('admin', { dryRun: true }),
    config: deps.config,
    upstreams: () => pool.status(),
    sessions: () => sessions.counts(),
    reconnect: (name) => pool.reconnect(name),
    connections: async ({ principals }) => await connectionsView(deps.connections, principals),
    revokeConnection: async (upstream, principal) => deps.connections === undefined ? false : await deps.connections.disconnect(upstream, principal),
    approvals: deps.approvals,
    pins: async (only) => {
      const config = deps.config()
      const view: AdminPinsView = { pinning: config.pinning.mode, scanning: config.scanning.mode, upstreams: [] }
      if (deps.pins === undefined) return view
      return { ...view, store: deps.pins.where, upstreams: pinsView(await deps.pins.listing(), config.upstreams.map(u => u.name), only) }
    },
    approvePins: async (selection) => await deps.pins?.approve(selection),
    ...(deps.console === undefined ? {} : consoleMembers(deps.console, connections === undefined ? undefined : async (key) => await connections.list(key)))
  }
}
