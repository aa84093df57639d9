import { createHash } from 'node:crypto'
import type { Session } from '../session/session.ts'
import type { AdminSessionItem, AdminSessionList } from './console-views.ts'

/** GET /admin/sessions lists at most this many sessions unless asked for fewer. */
export const DEFAULT_SESSION_LIST_LIMIT = 500
const MAX_CLIENT_CHARS = 200

/** What names a session to the admin API: enough to end it, useless to take it over (the id is a bearer secret). */
export function sessionRef (id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 16)
}

function clientOf (info: Record<string, unknown> | undefined): string | null {
  if (info === undefined || typeof info.name !== 'string') return null
  const named = typeof info.version === 'string' ? `${info.name} ${info.version}` : info.name
  return named.slice(0, MAX_CLIENT_CHARS)
}

function itemOf (session: Session): AdminSessionItem {
  return {
    ref: sessionRef(session.id),
    principal: session.principal.id,
    endpoint: session.endpoint ?? null,
    transport: session.transport,
    protocolVersion: session.protocolVersion,
    client: clientOf(session.clientInfo),
    openedAt: session.openedAt,
    lastActivityAt: session.lastActivity,
    inFlight: session.inFlightCount
  }
}

function count (counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1)
}

/** The sessions held here, counted by transport, principal and endpoint ('' for /mcp), and listed newest activity first. */
export function sessionList (sessions: Iterable<Session>, limit: number): AdminSessionList {
  const all = [...sessions]
  const byTransport = new Map<string, number>()
  const byPrincipal = new Map<string, number>()
  const byEndpoint = new Map<string, number>()
  for (const s of all) {
    count(byTransport, s.transport)
    count(byPrincipal, s.principal.id)
    count(byEndpoint, s.endpoint ?? '')
  }
  const cut = Math.max(0, Math.floor(limit))
  const listed = all.sort((a, b) => b.lastActivity - a.lastActivity).slice(0, cut).map(itemOf)
  return {
    total: all.length,
    byTransport: Object.fromEntries(byTransport),
    byPrincipal: Object.fromEntries(byPrincipal),
    byEndpoint: Object.fromEntries(byEndpoint),
    sessions: listed,
    truncated: all.length > listed.length
  }
}

/** The id of the session `ref` names, or undefined. */
export function sessionIdOf (sessions: Iterable<Session>, ref: string): string | undefined {
  if (!/^[0-9a-f]{16}$/.test(ref)) return undefined
  for (const s of sessions) if (sessionRef(s.id) === ref) return s.id
  return undefined
}
