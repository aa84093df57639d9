import type { Session } from './session.ts'
import type { SessionRecord } from './session-store.ts'

// A session as the shared store keeps it, and back.

export function recordOf (session: Session): SessionRecord {
  return {
    id: session.id,
    transport: session.transport,
    protocolVersion: session.protocolVersion,
    ...(session.clientInfo === undefined ? {} : { clientInfo: session.clientInfo }),
    clientCapabilities: session.clientCapabilities,
    principal: session.principal,
    ...(session.endpoint === undefined ? {} : { endpoint: session.endpoint }),
    ...(session.logLevel === undefined ? {} : { logLevel: session.logLevel }),
    ...(session.subscribed.size === 0 ? {} : { subscriptions: Object.fromEntries(session.subscribed) })
  }
}

/** The endpoint label is the path segment ("" for /mcp): fixed for the session's life, so inc and dec match. */
export function gaugeLabels (session: Session): { transport: string, endpoint: string } {
  return { transport: session.transport, endpoint: session.endpoint ?? '' }
}

export function applyRecord (session: Session, record: SessionRecord): void {
  session.logLevel = record.logLevel
  session.subscribed.clear()
  for (const [uri, upstream] of Object.entries(record.subscriptions ?? {})) session.subscribed.set(uri, upstream)
}
