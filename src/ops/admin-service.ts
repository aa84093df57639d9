import type { GatewayConfig } from '../config/schema.ts'
import type { SessionManager } from '../session/session-manager.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import type { ReloadResult } from './reload-result.ts'
import type { Reload } from './reloader.ts'

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
}

export interface AdminSessionsView { total: number, byTransport: Record<string, number>, byPrincipal: Record<string, number> }

/**
 * What an operator may see and do, whatever surface asks (the admin API today, a console next).
 * Knows nothing about HTTP; authentication is the surface's.
 */
export interface AdminService {
  /** Reads, validates and applies the config file again. */
  reload: () => Promise<ReloadResult>
  /** The config in force, secrets included: a surface shows it only through `redactConfig`. */
  config: () => GatewayConfig
  upstreams: () => AdminUpstreamView[]
  /** The sessions this replica holds. */
  sessions: () => AdminSessionsView
  /** A new connection takes over from the upstream's current one. false: no such upstream. */
  reconnect: (name: string) => boolean
}

export interface AdminServiceDeps {
  config: () => GatewayConfig
  pool: Pick<UpstreamPool, 'status' | 'reconnect'>
  sessions: Pick<SessionManager, 'counts'>
  reload: Reload
}

export function createAdminService (deps: AdminServiceDeps): AdminService {
  const { pool, sessions } = deps
  return {
    reload: async () => await deps.reload('admin'),
    config: deps.config,
    upstreams: () => pool.status(),
    sessions: () => sessions.counts(),
    reconnect: (name) => pool.reconnect(name)
  }
}
