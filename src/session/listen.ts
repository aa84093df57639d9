import type { Principal } from '../auth/principal.ts'
import type { SwitchboardError } from '../errors.ts'
import { type PrincipalLimits, type Slot, isLimitRefusal, principalKey } from '../limits/principal-limits.ts'
import { type JsonRpcMessage, type JsonRpcRequest, type RequestId, isRecord } from '../protocol/json-rpc.ts'
import type { ModernClaim } from '../protocol/modern.ts'
import type { Dispatcher } from './dispatcher.ts'
import type { MessageSink, Session } from './session.ts'
import type { SessionManager } from './session-manager.ts'

export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

/** What a 2026-07-28 client asks to hear on a `subscriptions/listen` stream. */
export interface ListenFilter {
  toolsListChanged?: boolean
  promptsListChanged?: boolean
  resourcesListChanged?: boolean
  resourceSubscriptions?: string[]
}

/** undefined when `notifications` is not a filter (the request is then invalid params). */
export function parseFilter (value: unknown): ListenFilter | undefined {
  if (!isRecord(value)) return undefined
  const out: ListenFilter = {}
  for (const key of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged'] as const) {
    const flag = value[key]
    if (flag === undefined) continue
    if (typeof flag !== 'boolean') return undefined
    if (flag) out[key] = true
  }
  const uris = value.resourceSubscriptions
  if (uris !== undefined) {
    if (!Array.isArray(uris) || !uris.every(u => typeof u === 'string')) return undefined
    if (uris.length > 0) out.resourceSubscriptions = [...new Set(uris)]
  }
  return out
}

const LIST_FLAGS: Readonly<Record<string, keyof ListenFilter>> = {
  'notifications/tools/list_changed': 'toolsListChanged',
  'notifications/prompts/list_changed': 'promptsListChanged',
  'notifications/resources/list_changed': 'resourcesListChanged'
}

export interface ListenDeps {
  dispatcher: Dispatcher
  sessions: SessionManager
  /** Caps listen streams per principal (limits.listenStreamsPerPrincipal); none when absent. */
  limits?: PrincipalLimits
}

/**
 * One `subscriptions/listen` of a 2026-07-28 client: a session that lives as long as its stream,
 * held where the list-change relay and the resource subscriptions find it, so it hears exactly what
 * a 2025-11-25 session's GET stream would, filtered to what it asked for and tagged with the listen
 * request's id. Every replica hears its own upstreams' changes, so any replica can hold it.
 */
export class Listen {
  readonly id: RequestId
  readonly session: Session
  /** What is honoured: the resource URIs this principal may read and an upstream serves. */
  honoured: ListenFilter = {}
  private readonly deps: ListenDeps
  private readonly slot: Slot | undefined
  private ended = false

  private constructor (deps: ListenDeps, id: RequestId, session: Session, slot: Slot | undefined) {
    this.deps = deps
    this.id = id
    this.session = session
    this.slot = slot
  }

  /**
   * undefined when the endpoint does not exist (any more); the refusal (SB_ERR_LIMIT_LISTEN_STREAMS)
   * when the principal already holds limits.listenStreamsPerPrincipal listens here. An open listen
   * holds its slot until `end()`.
   */
  static async open (deps: ListenDeps, request: JsonRpcRequest, filter: ListenFilter, claim: ModernClaim, principal: Principal, endpoint: string | undefined): Promise<Listen | SwitchboardError | undefined> {
    const slot = deps.limits?.acquire('listenStreamsPerPrincipal', principalKey(principal))
    if (isLimitRefusal(slot)) return slot
    const session = deps.sessions.listen({ transport: 'stateless', protocolVersion: claim.version, clientInfo: claim.clientInfo, clientCapabilities: {}, principal, endpoint })
    if (session === undefined) {
      slot?.release()
      return undefined
    }
    const listen = new Listen(deps, request.id, session, slot)
    const { resourceSubscriptions, ...lists } = filter
    listen.honoured = lists
    const subscribed: string[] = []
    for (const uri of resourceSubscriptions ?? []) {
      // The same path as a session's resources/subscribe: policy, routing, one upstream subscription per URI.
      const answer = await deps.dispatcher.handleInternal(session, { jsonrpc: '2.0', id: `listen.${subscribed.length}`, method: 'resources/subscribe', params: { uri } })
      if (answer !== undefined && 'result' in answer) subscribed.push(uri)
    }
    if (subscribed.length > 0) listen.honoured.resourceSubscriptions = subscribed
    return listen
  }

  /** The acknowledgement, then every notification the filter lets through, on `sink`. */
  attach (sink: MessageSink): void {
    sink.send(this.tagged({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: this.honoured } }))
    const uris = new Set(this.honoured.resourceSubscriptions)
    this.session.attachStream({
      send: (message) => {
        if (!('method' in message)) return
        const flag = LIST_FLAGS[message.method]
        const wanted = flag !== undefined
          ? this.honoured[flag] === true
          : message.method === 'notifications/resources/updated' && uris.has(String(message.params?.uri))
        if (wanted) sink.send(this.tagged(message))
      },
      close: () => { sink.close() }
    })
  }

  /** The answer that ends the stream gracefully (at shutdown). */
  closingAnswer (serverInfo: Record<string, unknown>): JsonRpcMessage {
    return { jsonrpc: '2.0', id: this.id, result: { resultType: 'complete', _meta: { [META_SUBSCRIPTION_ID]: this.id, 'io.modelcontextprotocol/serverInfo': serverInfo } } }
  }

  /** The stream ended: its resource subscriptions are dropped and the session forgotten. */
  async end (): Promise<void> {
    if (this.ended) return
    this.ended = true
    this.slot?.release()
    const uris = this.honoured.resourceSubscriptions ?? []
    for (const [i, uri] of uris.entries()) {
      await this.deps.dispatcher.handleInternal(this.session, { jsonrpc: '2.0', id: `unlisten.${i}`, method: 'resources/unsubscribe', params: { uri } })
    }
    this.session.close()
    this.deps.sessions.unlisten(this.session)
  }

  private tagged (message: JsonRpcMessage): JsonRpcMessage {
    if (!('method' in message)) return message
    const params = message.params ?? {}
    const meta = isRecord(params._meta) ? params._meta : {}
    return { ...message, params: { ...params, _meta: { ...meta, [META_SUBSCRIPTION_ID]: this.id } } }
  }
}
