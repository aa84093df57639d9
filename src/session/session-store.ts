import type { Principal } from '../auth/principal.ts'
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, RequestId } from '../protocol/json-rpc.ts'
import type { LogLevel } from './log-levels.ts'

/** What any replica needs to serve a session it has never seen: everything negotiated at initialize, and since. */
export interface SessionRecord {
  id: string
  transport: string
  protocolVersion: string
  clientInfo?: Record<string, unknown>
  clientCapabilities: Record<string, unknown>
  principal: Principal
  /** The endpoint path segment it was opened on; absent for /mcp. */
  endpoint?: string
  logLevel?: LogLevel
  /** Resource subscriptions: URI → the upstream that serves it. */
  subscriptions?: Record<string, string>
}

/** What crosses replicas. Only these travel: every other request is served where it lands. */
export type SessionMessage =
  /** The client's reply to a request (sampling, elicitation, roots) that another replica sent it. */
  | { kind: 'response', sessionId: string, response: JsonRpcResponse }
  /** notifications/cancelled for a request that may be running on another replica. */
  | { kind: 'cancel', sessionId: string, requestId: RequestId, reason: string }
  /** The session was deleted (DELETE): every replica forgets it. */
  | { kind: 'removed', sessionId: string }
  /** The record changed (log level): replicas holding the session re-read it. */
  | { kind: 'updated', sessionId: string }
  /**
   * A log an upstream sent outside any call: every replica hands it to the sessions whose GET
   * stream it holds. `params` is the notification's, `logger` already prefixed with the upstream.
   */
  | { kind: 'log', upstream: string, params: Record<string, unknown> }
  /**
   * A per-user upstream's listing that a user's connection taught a replica, now in the token vault
   * (`listing:<upstream>`, sealed): the others read that record unless they hold this version. The
   * lists themselves never travel (see gateway/shared-listings.ts).
   */
  | { kind: 'listing', upstream: string, version: string }

export type SessionMessageKind = SessionMessage['kind']

/**
 * A request that must be served on another replica, and what comes back from there: a 2026-07-28
 * client's retry, which resumes a call waiting there (no session: the era has none), or a
 * session's request about a task that replica holds (with the session's id). See RetryRouter.
 */
export type RetryMessage =
  | { kind: 'retry', ticket: string, from: string, request: JsonRpcRequest, principal: Principal, sessionId?: string, as?: 'resume' }
  | { kind: 'retry-alive', ticket: string }
  | { kind: 'retry-notice', ticket: string, message: JsonRpcMessage }
  | { kind: 'retry-answer', ticket: string, status: number, response?: JsonRpcResponse }
  | { kind: 'retry-cancel', ticket: string }

export const isRetryMessage = (message: SessionMessage | RetryMessage): message is RetryMessage => message.kind.startsWith('retry')

/**
 * Where sessions live beyond the replica that opened them, and the channel between replicas. The
 * memory store is the one-process case; the Redis store lets any replica serve any session.
 */
export interface SessionStore {
  /** True when other replicas share the sessions (a local miss is worth a load). */
  readonly shared: boolean
  /** This replica's tag: the ids of requests it sends to clients start with it. */
  readonly replica: string
  save: (record: SessionRecord) => Promise<void>
  /**
   * undefined when the session is unknown, expired or deleted; throws SB_ERR_SESSION_STORE_UNAVAILABLE
   * when the store cannot answer (the session may exist).
   */
  load: (id: string) => Promise<SessionRecord | undefined>
  /** The session is in use: keep it from expiring (the store bounds how often this writes). */
  touch: (id: string) => void
  remove: (id: string) => void
  /** To the replica with that tag, or to every replica (itself excluded) without one. */
  publish: (message: SessionMessage | RetryMessage, replica?: string) => void
  onMessage: (listener: (message: SessionMessage) => void) => void
  onRetry: (listener: (message: RetryMessage) => void) => void
  /** Writes the record unless the store already has one (a session it lost while it was away). */
  restore: (record: SessionRecord) => Promise<void>
  /** Called each time the store (re)connects: what it lost or never got can be written again. */
  onConnected: (listener: () => void) => void
  close: () => Promise<void>
}

/** One process: sessions live in the session manager; nothing crosses anywhere. */
export class MemorySessionStore implements SessionStore {
  readonly shared = false
  readonly replica = 'local'
  private readonly records = new Map<string, SessionRecord>()

  async save (record: SessionRecord): Promise<void> { this.records.set(record.id, record) }
  async load (id: string): Promise<SessionRecord | undefined> { return this.records.get(id) }
  touch (): void {}
  remove (id: string): void { this.records.delete(id) }
  publish (): void {}
  onMessage (): void {}
  onRetry (): void {}
  async restore (record: SessionRecord): Promise<void> { if (!this.records.has(record.id)) this.records.set(record.id, record) }
  onConnected (): void {}
  async close (): Promise<void> { this.records.clear() }
}
