import type { IncomingToken } from '../auth/incoming-token.ts'
import type { CredentialRequest } from '../credentials/credential-provider.ts'
import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import { describeError as describe } from './describe-error.ts'
import { RpcError } from '../protocol/json-rpc.ts'
import { REMOVED_METHODS, isModernVersion, mirroredParams } from '../protocol/modern.ts'
import { reconnectDelayMs } from './backoff.ts'
import { createTransport } from './create-transport.ts'
import { handshake } from './handshake.ts'
import { untilRestarted } from './restart-wait.ts'
import { withTimeout } from './with-timeout.ts'
import { healthCheck } from './health-check.ts'
import { afterRenewal, isCredentialFailure, isUnauthorized } from './credential-failure.ts'
import { CoalescedRuns } from './coalesced-runs.ts'
import { answerInputRequired, withClient } from './modern-upstream.ts'
import { ListenStream } from './listen-stream.ts'
import { CHANGED, EMPTY_LISTS, LIST_KINDS, type ListKind, type UpstreamLists, listAll } from './upstream-lists.ts'
import { RpcPeer, type PeerRequestOptions } from './rpc-peer.ts'
import type { ActiveCall, UpstreamConnectionOptions, UpstreamState } from './upstream-connection-types.ts'

export type { ActiveCall, UpstreamConnectionOptions, UpstreamListener, UpstreamState } from './upstream-connection-types.ts'

const RETIRE_POLL_MS = 25

/**
 * One managed connection to one upstream: connect and initialize with a bound, keep its lists
 * current, and reconnect with backoff and jitter for as long as the gateway runs.
 */
export class UpstreamConnection {
  readonly name: string
  readonly owner: string | undefined
  /** Whom it serves: every client (the upstream's own), one session's, or one principal's sessions. */
  readonly scope: 'upstream' | 'session' | 'principal'
  readonly activeCalls = new Set<ActiveCall>()
  private options: UpstreamConnectionOptions
  private readonly log: Logger
  private peer?: RpcPeer<ActiveCall>
  private stateValue: UpstreamState = 'connecting'
  /** Milliseconds since the epoch of the last change of state. */
  stateSince = Date.now()
  private attempt = 0
  private retryTimer?: NodeJS.Timeout
  /** When the scheduled reconnect starts (state backoff). */
  private nextAttemptAt = 0
  private healthTimer?: NodeJS.Timeout
  private readonly relists = new CoalescedRuns<ListKind>()
  private lists: UpstreamLists = EMPTY_LISTS
  private mirrored?: { tools: UpstreamLists['tools'], byName: Map<string, Readonly<Record<string, string>>> }
  /** 2026-07-28: list changes and the resources clients subscribed to, on a subscriptions/listen stream. */
  private readonly listening: ListenStream<ActiveCall>
  private readonly firstAttempt: Promise<void>
  private settleFirst!: () => void
  private stateWaiters: Array<() => void> = []
  private closed = false
  /** Taken out of service by a reload: finishing its calls, never reconnecting. */
  private retired = false
  serverInfo: Record<string, unknown> | undefined
  /** What the upstream declared in its initialize (or server/discover) result. */
  capabilities: Record<string, unknown> = {}
  /** modern: the upstream speaks 2026-07-28 (stateless); legacy: 2025-11-25 or older, in a session. */
  era: 'legacy' | 'modern' = 'legacy'
  /** The revision negotiated on the current connection. */
  protocolVersion: string | undefined
  lastError: string | undefined
  /** What the last failed attempt to connect threw: a caller's credential error is theirs to see (restart-wait.ts). */
  lastFailure: unknown
  /** Reconnect attempts since this connection was opened. */
  reconnects = 0
  /** A 401 since it was last ready had its credential renewed once already (see renewOrClose). */
  private renewed = false
  /** Whom its requests act for (undefined: the gateway itself), with the bearer token of their latest request. */
  private identity: CredentialRequest | undefined
  /** Read by the transport on each send. */
  readonly who = (): CredentialRequest | undefined => this.identity

  constructor (options: UpstreamConnectionOptions) {
    this.options = options
    this.name = options.config.name
    this.owner = options.owner
    this.scope = options.owner !== undefined ? 'session' : options.principal !== undefined ? 'principal' : 'upstream'
    this.identity = options.principal === undefined ? undefined : { principal: options.principal }
    this.log = options.log
    this.listening = new ListenStream({ log: options.log, listing: options.listing !== false, current: () => this.stateValue === 'ready' ? this.peer : undefined, closed: () => this.closed })
    this.firstAttempt = new Promise(resolve => { this.settleFirst = resolve })
  }

  /** A request of its principal came with this bearer token: later sends (a token exchange) trade it, never send it. */
  presented (token: IncomingToken | undefined): void {
    if (this.identity !== undefined && token !== undefined && this.identity.token !== token) this.identity = { principal: this.identity.principal, token }
  }

  get state (): UpstreamState { return this.stateValue }
  /** The stdio child's process id while it runs. */
  get pid (): number | undefined { return this.peer?.pid }
  /** How many tools the upstream lists now (0 until connected). */
  get toolCount (): number { return this.lists.tools.length }
  get config (): UpstreamConfig { return this.options.config }
  /** Resolves when the first connection attempt has succeeded or failed. */
  get settled (): Promise<void> { return this.firstAttempt }

  start (): void {
    void this.connect()
  }

  /** Not started, as it has no credential of its own: it says so (awaiting_user), and its first attempt counts as settled. */
  park (): void {
    this.setState('awaiting_user')
    this.settleFirst()
  }

  /** Not running by choice (lazy, or idle): listed as last seen (`lists`); a request starts it (onDemand). */
  rest (lists?: UpstreamLists): void {
    if (lists !== undefined) this.lists = lists
    this.setState('stopped')
    this.settleFirst()
  }

  /** A request waits for it while it is stopped: whoever manages its process starts it (once). */
  wake (): void { if (this.stateValue === 'stopped') this.options.onDemand?.(this) }

  /** Stops its process in order, as at shutdown; it stays listed, and the next request starts it again. */
  async stop (): Promise<void> {
    const peer = this.peer
    if (peer === undefined || this.closed || this.retired || this.stateValue !== 'ready') return
    this.peer = undefined
    clearInterval(this.healthTimer)
    this.listening.stop()
    this.rest()
    await peer.close().catch(() => {})
  }

  private setState (state: UpstreamState): void {
    if (this.stateValue === state) return
    this.stateValue = state
    this.stateSince = Date.now()
    const waiters = this.stateWaiters
    this.stateWaiters = []
    for (const wake of waiters) wake()
    this.options.listener.state(this.name, state)
  }

  private async connect (): Promise<void> {
    if (this.closed) return
    this.setState('connecting')
    const transport = await createTransport(this.options.config, { killAfterMs: this.options.killAfterMs, log: this.log, baseEnv: this.options.baseEnv, credentials: this.options.credentials, who: this.who, limits: this.options.limits })
    if (this.closed || this.retired) {
      await transport.close().catch(() => {})
      return
    }
    const peer = new RpcPeer<ActiveCall>(transport)
    this.peer = peer
    peer.onProtocolError = (err) => { this.log.warn({ err }, 'upstream protocol error') }
    peer.onAnswerLost = (request, err) => { this.log.warn({ method: request.method, err: describe(err) }, 'the answer to an upstream request could not be sent; the upstream will wait for it until its own timeout') }
    peer.onNotification = (method, params, call) => { this.notified(peer, method, params, call) }
    peer.onRequest = async (request, signal, call) => {
      if (request.method === 'ping') return {}
      const handler = this.options.listener.request
      if (handler === undefined) throw new RpcError(-32601, `Method not found: ${request.method}`)
      return await handler(this, request, signal, call)
    }
    peer.onClose = (err) => { this.lost(peer, err?.message ?? 'connection closed', err) }
    // An HTTP upstream has no connection whose end we would see: a send that cannot reach it, or
    // that finds our session forgotten, is how it shows. An error status fails only its request.
    peer.onConnectionLost = (err) => {
      if (this.stateValue !== 'ready') return
      this.log.warn({ err: err.message }, 'upstream connection lost; reconnecting')
      this.lost(peer, err.message)
    }
    const timeoutMs = this.options.config.connectTimeoutMs
    try {
      await withTimeout(peer.start(), timeoutMs, 'connect')
      const client = { clientInfo: this.options.clientInfo, clientCapabilities: this.options.clientCapabilities ?? {}, mirroredParams: (tool: string) => this.mirroredParams(tool) }
      const shook = await handshake(peer, transport, this.options.config, client, timeoutMs)
      const version = shook.version
      this.era = shook.era
      this.protocolVersion = version
      this.serverInfo = shook.serverInfo
      this.capabilities = shook.capabilities
      const listing = this.options.listing !== false
      const lists = listing ? await listAll(peer, this.capabilities, LIST_KINDS, EMPTY_LISTS, timeoutMs, this.log) : EMPTY_LISTS
      if (peer.isClosed || this.closed) return
      this.attempt = 0
      this.renewed = false
      this.lastError = undefined
      this.lastFailure = undefined
      this.lists = lists
      this.setState('ready')
      if (!this.retired) this.options.onHealth?.(true)
      this.log.info({ tools: lists.tools.length, prompts: lists.prompts.length, resources: lists.resources.length, server: this.serverInfo?.name, protocolVersion: version }, 'upstream connected')
      if (listing) this.options.listener.lists(this.name, lists)
      this.options.listener.ready?.(this)
      this.scheduleHealthCheck(peer)
      if (this.era === 'modern') this.listening.open(peer, this.capabilities)
    } catch (err: unknown) {
      this.lastError = describe(err)
      this.lastFailure = err
      this.log.warn({ err: this.lastError, attempt: this.attempt }, 'upstream connection failed')
      this.lost(peer, this.lastError, err)
    } finally {
      this.settleFirst()
    }
  }

  private notified (peer: RpcPeer<ActiveCall>, method: string, params: Record<string, unknown> | undefined, call: ActiveCall | undefined): void {
    if (method === 'notifications/subscriptions/acknowledged') return
    const kinds = CHANGED[method]
    if (kinds !== undefined) {
      if (this.options.listing !== false) this.relist(peer, kinds)
      return
    }
    this.options.listener.notification?.(this, method, params, call)
  }

  /** Re-lists after a list_changed; a burst during a re-list causes exactly one more. */
  private relist (peer: RpcPeer<ActiveCall>, kinds: readonly ListKind[]): void {
    this.relists.add(kinds, peer === this.peer && this.stateValue === 'ready', async (batch) => {
      try {
        const lists = await listAll(peer, this.capabilities, batch, this.lists, this.options.config.connectTimeoutMs, this.log)
        if (peer !== this.peer || peer.isClosed) return false
        this.lists = lists
        this.options.listener.lists(this.name, lists)
      } catch (err: unknown) {
        this.log.warn({ err: describe(err) }, 'upstream re-list failed')
      }
      return true
    })
  }

  /** A tool's `x-mcp-header` arguments, from the tools as last listed (indexed once per list). */
  private mirroredParams (tool: string): Readonly<Record<string, string>> {
    if (this.mirrored?.tools !== this.lists.tools) this.mirrored = { tools: this.lists.tools, byName: new Map(this.lists.tools.map(t => [t.name, mirroredParams(t)])) }
    return this.mirrored.byName.get(tool) ?? {}
  }

  private scheduleHealthCheck (peer: RpcPeer<ActiveCall>): void {
    this.healthTimer = healthCheck(peer, this.options.healthCheckMs, this.options.config.connectTimeoutMs, this.era, (err) => {
      if (!this.closesOn(err)) this.log.warn({ err: describe(err) }, 'upstream failed its health check; reconnecting')
      this.lost(peer, describe(err), err)
    })
  }

  /**
   * A caller's connection (a principal's or a session's) ends on its credential's failure, never
   * reconnecting in the background: no attempt could succeed until the caller acts (a fresh token,
   * a connect), and each would ask the authorization server on their behalf. Their next call opens another.
   */
  private closesOn (cause: unknown): boolean {
    return this.scope !== 'upstream' && isCredentialFailure(cause)
  }

  private lost (peer: RpcPeer<ActiveCall>, reason: string, cause?: unknown): void {
    if (peer !== this.peer) return
    this.peer = undefined
    if (this.healthTimer !== undefined) clearInterval(this.healthTimer)
    // Without a credential, ending the upstream's session would only be refused (and ask for one again).
    void peer.close({ keepSession: this.closesOn(cause) }).catch(() => {})
    if (this.closed || this.retired) return
    this.lastError = reason
    if (this.closesOn(cause)) {
      void this.renewOrClose(reason, cause)
      return
    }
    // Its lists stay as last known, in the catalog too: a restart is no change of tools, and a call
    // made meanwhile waits for it (see request) instead of finding its tool gone.
    const delay = reconnectDelayMs(this.attempt++, this.options.random)
    this.nextAttemptAt = Date.now() + delay
    this.setState('backoff')
    this.options.onHealth?.(false, cause)
    this.log.info({ delayMs: delay, attempt: this.attempt }, 'upstream reconnect scheduled')
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined
      this.reconnects++
      this.options.listener.reconnect(this.name)
      void this.connect()
    }, delay)
    this.retryTimer.unref()
  }

  /**
   * The 401 rule on a caller's connection: a 401 (the token expired at the upstream a little before
   * the gateway reckoned, clocks and `exp` in whole seconds) renews the credential once and connects
   * again at once, calls waiting meanwhile; a second 401, or any other credential failure, closes it.
   */
  private async renewOrClose (reason: string, cause: unknown): Promise<void> {
    const credentials = this.options.credentials
    if (!this.renewed && isUnauthorized(cause) && credentials?.refused !== undefined) {
      this.renewed = true
      this.setState('connecting')
      const renewed = await credentials.refused(this.options.config, this.who()).catch(() => false)
      if (this.closed || this.retired) return
      if (renewed) return await this.connect()
    }
    // What waiting calls are told (restart-wait.ts): the caller's own error, not an outage.
    this.lastFailure = this.renewed ? afterRenewal(cause) : cause
    this.log.info({ err: reason }, 'upstream connection closed: its caller has no usable credential; their next call opens another')
    void this.close()
    this.options.onUnusable?.(this)
  }

  /**
   * Forwards a request. While the connection is (re)starting, the request waits for that restart
   * within its own timeout (see untilRestarted), then goes out with the time it has left.
   */
  request (method: string, params: Record<string, unknown> | undefined, options: PeerRequestOptions<ActiveCall>, call?: ActiveCall): Promise<Record<string, unknown>> {
    const peer = this.peer
    if (peer === undefined || this.stateValue !== 'ready') {
      return untilRestarted(this, options).then(timeoutMs => this.request(method, params, { ...options, timeoutMs }, call))
    }
    if (this.era === 'modern') return this.modernRequest(peer, method, params, options, call)
    if (call === undefined) return peer.request(method, params, options)
    const pending = peer.request(method, params, { ...options, context: call })
    // Not an async function: this is the hot path, and each await is a promise per call.
    this.track(call, pending)
    return pending
  }

  /**
   * A request to a 2026-07-28 upstream: what the era removed is refused here; the client's
   * capabilities go in `_meta`; an input_required result is passed to a client of the same era, and
   * answered for a 2025-11-25 client by asking it in its session (see answerInputRequired).
   */
  private modernRequest (peer: RpcPeer<ActiveCall>, method: string, params: Record<string, unknown> | undefined, options: PeerRequestOptions<ActiveCall>, call: ActiveCall | undefined): Promise<Record<string, unknown>> {
    if (method === 'resources/subscribe' || method === 'resources/unsubscribe') return this.listening.watch(method, params)
    if (REMOVED_METHODS.has(method)) return Promise.reject(new RpcError(-32601, `Method not found: ${method} (upstream ${this.name} speaks 2026-07-28, which removed it)`))
    if (call === undefined) return peer.request(method, params, options)
    const client = call.client
    const asked = client === undefined ? params : withClient(params, client)
    const send = (out: Record<string, unknown> | undefined): Promise<Record<string, unknown>> => peer.request(method, out, { ...options, context: call })
    const handler = this.options.listener.request
    const modernClient = client?.protocolVersion !== undefined && isModernVersion(client.protocolVersion)
    const pending = send(asked).then(result => modernClient || handler === undefined
      ? result
      : answerInputRequired(result, asked, send, async (request, signal) => await handler(this, request, signal, call), options.signal))
    this.track(call, pending)
    return pending
  }

  /** A call is in flight until its answer: what the upstream sends meanwhile finds it, and a retire waits for it. */
  private track (call: ActiveCall, pending: Promise<unknown>): void {
    this.activeCalls.add(call)
    const done = (): void => {
      this.activeCalls.delete(call)
      this.options.onCallEnd?.(this)
    }
    pending.then(done, done)
  }

  /** Calls `listener` once, on the next change of state; the function returned cancels that. */
  onNextState (listener: () => void): () => void {
    this.stateWaiters.push(listener)
    return () => { this.stateWaiters = this.stateWaiters.filter(w => w !== listener) }
  }

  /** When the next attempt to connect starts: now when one is under way. */
  get nextAttempt (): number { return this.stateValue === 'backoff' ? this.nextAttemptAt : Date.now() }

  /** Whether it is out of service for good: closed, or retired by a reload. */
  get ended (): boolean { return this.closed || this.retired }

  /** Sends a notification when connected; dropped otherwise (state is re-applied on connect). */
  notify (method: string, params?: Record<string, unknown>): void {
    if (this.stateValue !== 'ready') return
    this.peer?.notify(method, params).catch((err: unknown) => { this.log.debug({ err: describe(err), method }, 'upstream notification not sent') })
  }

  /**
   * Out of service (a reload removed or changed its upstream, or an operator asked for a
   * reconnect): it reports nothing more (a successor may already serve the name) and does not
   * reconnect; the calls in flight finish on it, for at most `withinMs`, then it closes.
   */
  async retire (withinMs: number): Promise<void> {
    this.retired = true
    const quiet = (): void => {}
    this.options = { ...this.options, listener: { ...this.options.listener, lists: quiet, state: quiet, reconnect: quiet } }
    if (this.healthTimer !== undefined) clearInterval(this.healthTimer)
    const deadline = Date.now() + withinMs
    while (this.activeCalls.size > 0 && !this.closed && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, RETIRE_POLL_MS))
    if (this.activeCalls.size > 0) this.log.warn({ calls: this.activeCalls.size }, 'retired upstream connection closed with calls still in flight')
    await this.close()
  }

  async close (): Promise<void> {
    this.closed = true
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    if (this.healthTimer !== undefined) clearInterval(this.healthTimer)
    const peer = this.peer
    this.peer = undefined
    this.setState('closed')
    this.settleFirst()
    await peer?.close().catch(() => {})
  }
}
