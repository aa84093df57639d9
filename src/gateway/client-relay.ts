import type { Logger } from 'pino'
import type { Metrics } from '../observability/metrics.ts'
import { type JsonRpcMessage, type JsonRpcRequest, RPC, RpcError, isRecord } from '../protocol/json-rpc.ts'
import { type LogLevel, mostVerbose, passesLevel } from '../session/log-levels.ts'
import type { RelatedSender, Session } from '../session/session.ts'
import type { SessionManager } from '../session/session-manager.ts'
import type { ActiveCall, UpstreamConnection, UpstreamListener } from '../upstream/upstream-connection.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import { SeenRecently } from './seen-recently.ts'
import type { Subscriptions } from './subscriptions.ts'
import type { TaskRelay } from './task-relay.ts'

export interface ClientRelayDeps {
  sessions: SessionManager
  pool: UpstreamPool
  subscriptions: Subscriptions
  tasks: TaskRelay
  metrics: Metrics
  log: Logger
}

/** The client a message from an upstream belongs to, and the stream of the request that caused it. */
interface Target { session: Session, related?: RelatedSender }

const LEVEL_TIMEOUT_MS = 5_000
/**
 * Replicas hear one upstream's log within milliseconds of each other; the same log twice within
 * this window is taken as one (an upstream repeating itself that fast loses the repeat).
 */
const LOG_DEDUP_WINDOW_MS = 1_000

/**
 * Everything an upstream sends that is not an answer: logs, resource updates and requests to the
 * client (sampling, elicitation, roots). Each goes to the session whose call is in progress on that
 * connection, on that call's stream; a session's own connection (isolation: session) always goes
 * to its session. Log levels and subscriptions live in the upstream, so they are re-applied here
 * whenever a connection comes (back) up.
 */
export function createClientRelay (deps: ClientRelayDeps): Required<Pick<UpstreamListener, 'notification' | 'request' | 'ready'>> & {
  setLevel: (session: Session, level: LogLevel) => void
  levelChanged: (session: Session) => void
  syncSubscriptions: (session: Session) => void
  sessionOpened: () => void
  sessionClosed: (session: Session) => void
  logFromReplica: (upstream: string, params: Record<string, unknown>) => boolean
} {
  const { sessions, pool, subscriptions, metrics, log } = deps
  /** URL elicitations in progress: their completion notice goes to the client that was asked. */
  const elicitations = new Map<string, string>()
  let sharedLevel: LogLevel | undefined
  const recentLogs = new SeenRecently(LOG_DEDUP_WINDOW_MS)

  /**
   * Exact when the transport tells on whose request's stream a message came (`call`: HTTP
   * upstreams); otherwise unambiguous only when every call in progress on the connection is one
   * session's.
   */
  function attribute (connection: UpstreamConnection, call?: ActiveCall): Target | undefined {
    if (call !== undefined) {
      const session = sessions.peek(call.sessionId)
      return session === undefined ? undefined : { session, related: call.related }
    }
    let sessionId = connection.owner
    let related: RelatedSender | undefined
    for (const call of connection.activeCalls) {
      if (sessionId !== undefined && sessionId !== call.sessionId) return undefined
      sessionId = call.sessionId
      related = connection.activeCalls.size === 1 ? call.related : undefined
    }
    const session = sessionId === undefined ? undefined : sessions.peek(sessionId)
    return session === undefined ? undefined : { session, related }
  }

  function deliver (target: Target, message: JsonRpcMessage): void {
    if (target.related !== undefined) target.related(message)
    else if (!target.session.sendUnsolicited(message)) return
    metrics.notifications.inc({ method: (message as { method: string }).method })
  }

  function relayLog (connection: UpstreamConnection, params: Record<string, unknown>, call: ActiveCall | undefined): void {
    const logger = typeof params.logger === 'string' && params.logger !== '' ? `${connection.name}/${params.logger}` : connection.name
    const message = { jsonrpc: '2.0' as const, method: 'notifications/message', params: { ...params, logger } }
    const target = attribute(connection, call)
    if (target !== undefined) {
      if (passesLevel(params.level, target.session.logLevel)) deliver(target, message)
      return
    }
    // The listing connection of a session-isolated upstream serves no client, and a principal's
    // serves only that principal: outside a call their logs are their own, never everyone's.
    if ((connection.config.isolation === 'session' && connection.owner === undefined) || connection.scope === 'principal') {
      log.debug({ upstream: connection.name, params }, 'log outside any call from a connection that serves no one client')
      return
    }
    // A shared upstream logging outside any one client's call: every client of it may see it,
    // wherever its stream is. Each replica has its own connection to the upstream, so several may
    // hear the same log: it goes on once.
    if (sessions.sharing) {
      if (!recentLogs.first([connection.name, JSON.stringify(message.params)])) return
      sessions.publishLog(connection.name, message.params)
    }
    toStreams(message)
  }

  /** To every session whose stream this replica holds, at its level. */
  function toStreams (message: JsonRpcMessage & { params: Record<string, unknown> }): void {
    for (const session of sessions.all()) {
      if (passesLevel(message.params.level, session.logLevel)) deliver({ session }, message)
    }
  }

  /** A log another replica heard outside any call; false when this replica already handed it on. */
  function logFromReplica (upstream: string, params: Record<string, unknown>): boolean {
    if (!recentLogs.first([upstream, JSON.stringify(params)])) return false
    toStreams({ jsonrpc: '2.0', method: 'notifications/message', params })
    return true
  }

  function relayUpdate (connection: UpstreamConnection, params: Record<string, unknown>): void {
    if (typeof params.uri !== 'string') return
    const message: JsonRpcMessage = { jsonrpc: '2.0', method: 'notifications/resources/updated', params }
    for (const id of subscriptions.subscribers(connection.name, params.uri)) {
      if (connection.owner !== undefined && connection.owner !== id) continue
      const session = sessions.peek(id)
      if (session !== undefined) deliver({ session }, message)
    }
  }

  /** A task's status goes to the session that created it, under the gateway's id; an unknown task's is dropped. */
  function relayTaskStatus (connection: UpstreamConnection, params: Record<string, unknown>): void {
    const entry = deps.tasks.fromUpstream(connection.name, params.taskId)
    const session = entry === undefined ? undefined : sessions.peek(entry.sessionId)
    if (entry === undefined || session === undefined) {
      log.debug({ upstream: connection.name }, 'status of a task no client here created dropped')
      return
    }
    deliver({ session }, { jsonrpc: '2.0', method: 'notifications/tasks/status', params: deps.tasks.heard(entry, params) })
  }

  function notification (connection: UpstreamConnection, method: string, params: Record<string, unknown> | undefined, call?: ActiveCall): void {
    if (method === 'notifications/message' && params !== undefined) return relayLog(connection, params, call)
    if (method === 'notifications/resources/updated' && params !== undefined) return relayUpdate(connection, params)
    if (method === 'notifications/tasks/status' && params !== undefined) return relayTaskStatus(connection, params)
    let target = attribute(connection, call)
    if (method === 'notifications/elicitation/complete' && typeof params?.elicitationId === 'string') {
      const session = sessions.peek(elicitations.get(params.elicitationId) ?? '')
      elicitations.delete(params.elicitationId)
      if (session !== undefined) target = { session }
    }
    if (target === undefined) {
      log.debug({ upstream: connection.name, method }, 'upstream notification for no particular client dropped')
      return
    }
    deliver(target, params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params })
  }

  /** Refuses what the client did not declare, at once, so the upstream never waits for nothing. */
  function checkCapability (session: Session, request: JsonRpcRequest): void {
    const caps = session.clientCapabilities
    const missing = (what: string): RpcError => new RpcError(RPC.METHOD_NOT_FOUND, `The client did not declare the ${what} capability`)
    switch (request.method) {
      case 'sampling/createMessage':
        if (caps.sampling === undefined) throw missing('sampling')
        return
      case 'roots/list':
        if (caps.roots === undefined) throw missing('roots')
        return
      case 'elicitation/create': {
        const elicitation = caps.elicitation
        if (!isRecord(elicitation)) throw missing('elicitation')
        const mode = request.params?.mode ?? 'form'
        // An empty elicitation capability means form mode only.
        const declared = mode === 'form' ? (Object.keys(elicitation).length === 0 || elicitation.form !== undefined) : elicitation[String(mode)] !== undefined
        if (!declared) throw new RpcError(RPC.INVALID_PARAMS, `The client did not declare elicitation mode ${String(mode)}`)
        return
      }
      default:
        throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${request.method}`)
    }
  }

  async function request (connection: UpstreamConnection, req: JsonRpcRequest, signal: AbortSignal, call?: ActiveCall): Promise<Record<string, unknown>> {
    const labels = { upstream: connection.name, method: req.method }
    // The listing connection of a session-isolated upstream declares roots so that the upstream
    // shows what it shows to clients with roots, but it serves no client, so it has none.
    if (req.method === 'roots/list' && connection.config.isolation === 'session' && connection.owner === undefined) return { roots: [] }
    const target = attribute(connection, call)
    if (target === undefined) {
      metrics.serverRequests.inc({ ...labels, outcome: 'unroutable' })
      throw new RpcError(RPC.INTERNAL_ERROR, connection.activeCalls.size === 0
        ? 'Switchboard: this request is not part of a client call, and the connection is shared by every client; set isolation: session for this upstream'
        : 'Switchboard: calls of several clients are in progress on this shared connection, so the request cannot be routed; set isolation: session for this upstream')
    }
    try {
      checkCapability(target.session, req)
    } catch (err) {
      metrics.serverRequests.inc({ ...labels, outcome: 'unsupported' })
      throw err
    }
    if (req.method === 'elicitation/create' && req.params?.mode === 'url' && typeof req.params.elicitationId === 'string') {
      elicitations.set(req.params.elicitationId, target.session.id)
    }
    // Bounded even if the client never answers and the upstream never cancels.
    const bounded = AbortSignal.any([signal, AbortSignal.timeout(connection.config.timeoutMs)])
    try {
      const result = await target.session.requestClient(req.method, req.params, target.related, bounded)
      metrics.serverRequests.inc({ ...labels, outcome: 'ok' })
      return result
    } catch (err) {
      metrics.serverRequests.inc({ ...labels, outcome: err instanceof RpcError ? 'error' : 'cancelled' })
      if (err instanceof RpcError) throw err
      throw new RpcError(RPC.INTERNAL_ERROR, `Switchboard: the client did not answer ${req.method}`)
    }
  }

  function sendLevel (connection: UpstreamConnection, level: LogLevel | undefined): void {
    // A 2026-07-28 upstream has no logging/setLevel: each call carries its client's level in `_meta`.
    if (level === undefined || connection.capabilities.logging === undefined || connection.state !== 'ready' || connection.era === 'modern') return
    connection.request('logging/setLevel', { level }, { timeoutMs: LEVEL_TIMEOUT_MS }).catch((err: unknown) => {
      log.warn({ upstream: connection.name, err }, 'upstream refused logging/setLevel')
    })
  }

  function resubscribe (connection: UpstreamConnection): void {
    if (!isRecord(connection.capabilities.resources) || connection.capabilities.resources.subscribe !== true) return
    for (const uri of subscriptions.uris(connection.name, connection.owner)) {
      connection.request('resources/subscribe', { uri }, { timeoutMs: LEVEL_TIMEOUT_MS }).catch((err: unknown) => {
        log.warn({ upstream: connection.name, uri, err }, 'resubscribing after reconnect failed')
      })
    }
  }

  function ready (connection: UpstreamConnection): void {
    const owner = connection.owner === undefined ? undefined : sessions.peek(connection.owner)
    sendLevel(connection, connection.owner === undefined ? sharedLevel : owner?.logLevel)
    resubscribe(connection)
  }

  /**
   * A shared upstream sends at the most verbose level any client wants; each client's own threshold
   * filters. Nothing is asked of it until some client sets a level; from then on a client that set
   * none is owed every message, so it counts as debug. Recomputed as sessions come and go.
   */
  function applySharedLevel (): void {
    const levels = [...sessions.all()].map(s => s.logLevel)
    if (!levels.some(l => l !== undefined)) return
    const next = mostVerbose(levels.map(l => l ?? 'debug'))
    if (next === sharedLevel) return
    sharedLevel = next
    for (const connection of pool.sharedConnections()) {
      if (connection.config.isolation === 'shared') sendLevel(connection, next)
    }
  }

  function setLevel (session: Session, level: LogLevel): void {
    session.logLevel = level
    sessions.saveState(session)
    levelChanged(session)
  }

  /** The session's level changed, here or (shared sessions) on another replica. */
  function levelChanged (session: Session): void {
    for (const connection of pool.sessionConnections(session.id)) sendLevel(connection, session.logLevel)
    applySharedLevel()
  }

  /**
   * Makes this replica's subscriptions of the session match what it subscribed to on any replica,
   * so resource updates reach it wherever its GET stream is. Shared connections are subscribed on
   * the first subscriber; a session's own connection re-subscribes when it connects.
   */
  function syncSubscriptions (session: Session): void {
    for (const connection of pool.sharedConnections()) {
      const upstream = connection.name
      const subscribeHere = connection.config.isolation === 'shared' && connection.state === 'ready'
      const have = new Set(subscriptions.uris(upstream, session.id))
      for (const [uri, owner] of session.subscribed) {
        if (owner !== upstream || have.has(uri)) continue
        if (subscriptions.add(upstream, uri, session.id) && subscribeHere) {
          connection.request('resources/subscribe', { uri }, { timeoutMs: LEVEL_TIMEOUT_MS }).catch((err: unknown) => {
            log.warn({ upstream, uri, err }, 'taking on a subscription of another replica failed')
          })
        }
      }
      for (const uri of have) {
        if (session.subscribed.get(uri) === upstream) continue
        if (subscriptions.remove(upstream, uri, session.id) && subscribeHere) {
          unsubscribe(connection, uri, 'dropping a subscription another replica ended failed')
        }
      }
    }
  }

  /** The upstream keeps sending updates nobody wants until it forgets the URI: a failure is worth a line. */
  function unsubscribe (connection: UpstreamConnection, uri: string, what: string): void {
    connection.request('resources/unsubscribe', { uri }, { timeoutMs: LEVEL_TIMEOUT_MS }).catch((err: unknown) => {
      log.warn({ upstream: connection.name, uri, err }, what)
    })
  }

  function sessionClosed (session: Session): void {
    applySharedLevel()
    for (const [id, owner] of elicitations) if (owner === session.id) elicitations.delete(id)
    for (const { upstream, uri } of subscriptions.removeSession(session.id)) {
      const connection = pool.get(upstream)
      if (connection?.config.isolation !== 'shared' || connection.state !== 'ready') continue
      unsubscribe(connection, uri, 'unsubscribing a closed session\'s last subscriber failed')
    }
    void pool.releaseSession(session.id)
  }

  return { notification, request, ready, setLevel, levelChanged, syncSubscriptions, sessionOpened: applySharedLevel, sessionClosed, logFromReplica }
}
