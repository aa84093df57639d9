import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import { SwitchboardError, isSwitchboardError } from '../errors.ts'
import { RpcError, isRecord } from '../protocol/json-rpc.ts'
import { SUPPORTED_PROTOCOL_VERSIONS, LATEST_PROTOCOL_VERSION } from '../protocol/versions.ts'
import { backoffDelayMs } from './backoff.ts'
import { createTransport } from './create-transport.ts'
import { RpcPeer, type PeerRequestOptions } from './rpc-peer.ts'

export interface UpstreamTool { name: string, [key: string]: unknown }

export type UpstreamState = 'connecting' | 'ready' | 'backoff' | 'closed'

export interface UpstreamListener {
  /** The upstream's full tool list, or undefined when it went away. */
  tools: (upstream: string, tools: readonly UpstreamTool[] | undefined) => void
  state: (upstream: string, state: UpstreamState) => void
  reconnect: (upstream: string) => void
}

export interface UpstreamConnectionOptions {
  config: UpstreamConfig
  log: Logger
  listener: UpstreamListener
  killAfterMs: number
  baseEnv: Readonly<Record<string, string | undefined>>
  clientInfo: { name: string, version: string }
  healthCheckMs?: number
  random?: () => number
}

export const MAX_LIST_PAGES = 1000

/**
 * One managed connection to one upstream: connect and initialize with a bound, keep the tool
 * list current, and reconnect with backoff and jitter for as long as the gateway runs.
 */
export class UpstreamConnection {
  readonly name: string
  private readonly options: UpstreamConnectionOptions
  private readonly log: Logger
  private peer?: RpcPeer
  private stateValue: UpstreamState = 'connecting'
  private attempt = 0
  private retryTimer?: NodeJS.Timeout
  private healthTimer?: NodeJS.Timeout
  private relisting?: Promise<void>
  private relistAgain = false
  private firstAttempt: Promise<void>
  private settleFirst!: () => void
  private closed = false
  serverInfo: Record<string, unknown> | undefined
  lastError: string | undefined

  constructor (options: UpstreamConnectionOptions) {
    this.options = options
    this.name = options.config.name
    this.log = options.log
    this.firstAttempt = new Promise(resolve => { this.settleFirst = resolve })
  }

  get state (): UpstreamState { return this.stateValue }
  get config (): UpstreamConfig { return this.options.config }
  /** Resolves when the first connection attempt has succeeded or failed. */
  get settled (): Promise<void> { return this.firstAttempt }

  start (): void {
    void this.connect()
  }

  private setState (state: UpstreamState): void {
    if (this.stateValue === state) return
    this.stateValue = state
    this.options.listener.state(this.name, state)
  }

  private async connect (): Promise<void> {
    if (this.closed) return
    this.setState('connecting')
    const transport = createTransport(this.options.config, { killAfterMs: this.options.killAfterMs, log: this.log, baseEnv: this.options.baseEnv })
    const peer = new RpcPeer(transport)
    this.peer = peer
    peer.onProtocolError = (err) => { this.log.warn({ err }, 'upstream protocol error') }
    peer.onNotification = (method) => {
      if (method === 'notifications/tools/list_changed') this.relist()
    }
    peer.onClose = () => { this.lost(peer, 'connection closed') }
    // An HTTP upstream has no connection whose end we would see: a failed send is how it shows.
    peer.onSendFailure = (err) => {
      if (this.stateValue !== 'ready') return
      this.log.warn({ err: err.message }, 'upstream request could not be sent; reconnecting')
      this.lost(peer, err.message)
    }
    const timeoutMs = this.options.config.connectTimeoutMs
    try {
      await withTimeout(peer.start(), timeoutMs, 'connect')
      const init = await peer.request('initialize', {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: this.options.clientInfo
      }, { timeoutMs })
      const version = init.protocolVersion
      if (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
        throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `unsupported protocol version ${String(version)}`)
      }
      transport.setProtocolVersion?.(version)
      await peer.notify('notifications/initialized')
      this.serverInfo = isRecord(init.serverInfo) ? init.serverInfo : undefined
      const tools = await this.listTools(peer, timeoutMs)
      if (peer.isClosed || this.closed) return
      this.attempt = 0
      this.lastError = undefined
      this.setState('ready')
      this.log.info({ tools: tools.length, server: this.serverInfo?.name, protocolVersion: version }, 'upstream connected')
      this.options.listener.tools(this.name, tools)
      this.scheduleHealthCheck(peer)
    } catch (err: unknown) {
      this.lastError = describe(err)
      this.log.warn({ err: this.lastError, attempt: this.attempt }, 'upstream connection failed')
      this.lost(peer, this.lastError)
    } finally {
      this.settleFirst()
    }
  }

  private async listTools (peer: RpcPeer, timeoutMs: number): Promise<UpstreamTool[]> {
    const tools: UpstreamTool[] = []
    const seen = new Set<string>()
    let cursor: string | undefined
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const result = await peer.request('tools/list', cursor === undefined ? {} : { cursor }, { timeoutMs })
      if (!Array.isArray(result.tools)) throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', 'tools/list result has no tools array')
      for (const tool of result.tools) {
        if (isRecord(tool) && typeof tool.name === 'string' && tool.name !== '') tools.push(tool as UpstreamTool)
        else this.log.warn('upstream listed a tool without a name; skipped')
      }
      const next = result.nextCursor
      if (typeof next !== 'string') return tools
      if (seen.has(next)) {
        this.log.warn({ cursor: next }, 'upstream repeated a tools/list cursor; stopped paging')
        return tools
      }
      seen.add(next)
      cursor = next
    }
    this.log.warn({ pages: MAX_LIST_PAGES }, 'upstream tools/list exceeded the page limit; stopped paging')
    return tools
  }

  /** Re-lists after a list_changed; a burst during a re-list causes exactly one more. */
  private relist (): void {
    if (this.relisting !== undefined) {
      this.relistAgain = true
      return
    }
    const peer = this.peer
    if (peer === undefined || this.stateValue !== 'ready') return
    this.relisting = (async () => {
      do {
        this.relistAgain = false
        try {
          const tools = await this.listTools(peer, this.options.config.connectTimeoutMs)
          if (peer !== this.peer || peer.isClosed) return
          this.options.listener.tools(this.name, tools)
        } catch (err: unknown) {
          this.log.warn({ err: describe(err) }, 'upstream re-list failed')
        }
      } while (this.relistAgain)
    })().finally(() => { this.relisting = undefined })
  }

  private scheduleHealthCheck (peer: RpcPeer): void {
    const every = this.options.healthCheckMs
    if (every === undefined || every <= 0) return
    this.healthTimer = setInterval(() => {
      peer.request('ping', undefined, { timeoutMs: Math.min(every, this.options.config.connectTimeoutMs) }).catch((err: unknown) => {
        if (peer.isClosed) return
        this.log.warn({ err: describe(err) }, 'upstream failed its health check; reconnecting')
        void peer.close()
      })
    }, every)
    this.healthTimer.unref()
  }

  private lost (peer: RpcPeer, reason: string): void {
    if (peer !== this.peer) return
    this.peer = undefined
    if (this.healthTimer !== undefined) clearInterval(this.healthTimer)
    void peer.close().catch(() => {})
    if (this.closed) return
    const wasReady = this.stateValue === 'ready'
    this.lastError = reason
    this.setState('backoff')
    if (wasReady) this.options.listener.tools(this.name, undefined)
    const delay = backoffDelayMs(this.attempt++, this.options.random)
    this.log.info({ delayMs: delay, attempt: this.attempt }, 'upstream reconnect scheduled')
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined
      this.options.listener.reconnect(this.name)
      void this.connect()
    }, delay)
    this.retryTimer.unref()
  }

  /** Forwards a request; fails at once when the upstream is not connected. */
  request (method: string, params: Record<string, unknown> | undefined, options: PeerRequestOptions): Promise<Record<string, unknown>> {
    const peer = this.peer
    if (peer === undefined || this.stateValue !== 'ready') {
      return Promise.reject(new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE', `upstream ${this.name} is not connected${this.lastError === undefined ? '' : ` (${this.lastError})`}`))
    }
    return peer.request(method, params, options)
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

async function withTimeout<T> (promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => { reject(new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT', `${what} timed out after ${ms} ms`)) }, ms)
    })])
  } finally {
    clearTimeout(timer)
  }
}

function describe (err: unknown): string {
  if (err instanceof RpcError) return `JSON-RPC error ${err.code}: ${err.message}`
  if (isSwitchboardError(err)) return err.message
  if (err instanceof Error) return err.message
  return String(err)
}
