import {
  type JsonRpcMessage, type JsonRpcNotification, type JsonRpcRequest, type RequestId,
  RPC, RpcError, isRecord, isRequest, isResponse, rpcError, rpcResult, validateMessage
} from '../protocol/json-rpc.ts'
import { SwitchboardError } from '../errors.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import { isEncodingFailure } from '../protocol/encode-json.ts'
import { classifySendFailure } from './send-failure.ts'
import { rawAnswer, type RawMessage } from '../protocol/raw-answer.ts'
import type { CloseOptions, UpstreamTransport } from './upstream-transport.ts'

export interface ProgressParams { progress: number, total?: number, message?: string, [k: string]: unknown }

export interface PeerRequestOptions<C = unknown> {
  signal?: CancelSignal
  timeoutMs?: number
  onProgress?: (params: ProgressParams) => void
  /** Handed back with whatever the upstream sends on this request's own stream. */
  context?: C
  /**
   * The result is relayed rather than read: it comes as a raw result (raw-result.ts), its text
   * kept for the writers and its nested members parsed only if someone reads them.
   */
  raw?: boolean
}

interface Pending<C> {
  context?: C
  resolve: (result: Record<string, unknown>) => void
  reject: (err: Error) => void
  onProgress?: (params: ProgressParams) => void
  timer?: NodeJS.Timeout
  signal?: CancelSignal
  onAbort?: () => void
  raw?: boolean
}

/** `context`: that of the request on whose stream it arrived, where the transport can tell. */
export type NotificationHandler<C> = (method: string, params: Record<string, unknown> | undefined, context?: C) => void
/** Answers a request the upstream sent us; `signal` aborts when the upstream cancels it. */
export type RequestHandler<C> = (request: JsonRpcRequest, signal: AbortSignal, context?: C) => Promise<Record<string, unknown>>

/**
 * A lean JSON-RPC endpoint over an SDK transport: request/response matching, timeouts and
 * cancellation that send notifications/cancelled, progress routed by our own tokens, and every
 * pending request failed at once when the transport closes. Results are returned as parsed,
 * never re-validated, so they pass through untouched; a request flagged `raw` gets its result as
 * the text the upstream wrote (raw-answer.ts), offered by the transport before it parses anything.
 */
export class RpcPeer<C = unknown> {
  private readonly transport: UpstreamTransport
  private readonly pending = new Map<RequestId, Pending<C>>()
  private readonly incoming = new Map<RequestId, AbortController>()
  private nextId = 1
  /** Requests pending whose result is relayed raw: while there are none, a message is parsed the ordinary way. */
  private rawPending = 0
  private closed = false
  onNotification: NotificationHandler<C> = () => {}
  onRequest: RequestHandler<C> = async (req) => {
    if (req.method === 'ping') return {}
    throw new RpcError(RPC.METHOD_NOT_FOUND, `Method not found: ${req.method}`)
  }

  onClose: (err?: Error) => void = () => {}
  /** A send failed in a way that means the connection is gone (HTTP upstream unreachable, session expired). */
  onConnectionLost: (err: Error) => void = () => {}
  onProtocolError: (err: Error) => void = () => {}
  /** Our answer to a request of the upstream (sampling, elicitation, roots, ping) could not be sent. */
  onAnswerLost: (request: JsonRpcRequest, err: Error) => void = () => {}

  /** The transport's child process, when it has one (stdio). */
  get pid (): number | undefined { return this.transport.pid }

  constructor (transport: UpstreamTransport) {
    this.transport = transport
    transport.onmessage = (message: unknown, related?: RequestId) => { this.receive(message, related) }
    transport.takeRaw = (message: string | RawMessage) => this.rawPending > 0 && this.settleRaw(message)
    transport.onclose = () => { this.handleClose() }
    transport.onerror = (err: Error) => { this.onProtocolError(err) }
    transport.onlost = (id: RequestId, err: Error) => { this.settle(id)?.reject(err) }
  }

  get isClosed (): boolean { return this.closed }

  async start (): Promise<void> { await this.transport.start() }

  request (method: string, params: Record<string, unknown> | undefined, options: PeerRequestOptions<C> = {}): Promise<Record<string, unknown>> {
    if (this.closed) return Promise.reject(new SwitchboardError('SB_ERR_UPSTREAM_CLOSED'))
    if (options.signal?.aborted === true) return Promise.reject(abortError(options.signal))
    const id = this.nextId++
    let outParams = params
    if (options.onProgress !== undefined) {
      const meta = isRecord(params?._meta) ? params._meta : {}
      outParams = { ...params, _meta: { ...meta, progressToken: id } }
    }
    return new Promise((resolve, reject) => {
      const entry: Pending<C> = { resolve, reject, onProgress: options.onProgress, context: options.context }
      if (options.raw === true) {
        entry.raw = true
        this.rawPending++
      }
      if (options.timeoutMs !== undefined) {
        const timeoutMs = options.timeoutMs
        entry.timer = setTimeout(() => {
          this.cancel(id, `timed out after ${timeoutMs} ms`)
          reject(new SwitchboardError('SB_ERR_UPSTREAM_TIMEOUT', `no answer within ${timeoutMs} ms`, { details: { timeoutMs } }))
        }, timeoutMs)
      }
      if (options.signal !== undefined) {
        const signal = options.signal
        entry.signal = signal
        entry.onAbort = () => {
          this.cancel(id, 'cancelled by the client')
          reject(abortError(signal))
        }
        signal.addEventListener('abort', entry.onAbort, { once: true })
      }
      this.pending.set(id, entry)
      const message: JsonRpcRequest = outParams === undefined
        ? { jsonrpc: '2.0', id, method }
        : { jsonrpc: '2.0', id, method, params: outParams }
      this.sendOrReject(message).catch((err: unknown) => {
        // Already settled: given up (timeout, cancellation), and the abort is what failed the send.
        if (this.settle(id) === undefined) return
        const failure = classifySendFailure(err)
        reject(failure.error)
        if (failure.lost) this.onConnectionLost(failure.error)
      })
    })
  }

  /** The transport's send, with a synchronous throw (a transport that is not an async function) as a rejection. */
  private sendOrReject (message: JsonRpcMessage): Promise<void> {
    try {
      return this.transport.send(message)
    } catch (err: unknown) {
      return Promise.reject(err)
    }
  }

  async notify (method: string, params?: Record<string, unknown>): Promise<void> {
    if (this.closed) return
    const message: JsonRpcNotification = params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params }
    await this.transport.send(message)
  }

  async close (options?: CloseOptions): Promise<void> {
    if (this.closed) return
    try { await this.transport.close(options) } finally { this.handleClose() }
  }

  private cancel (id: RequestId, reason: string): void {
    if (this.settle(id) === undefined) return
    this.notify('notifications/cancelled', { requestId: id, reason }).catch(() => {})
    // An HTTP upstream's POST and stream for it would otherwise stay open until it answers, if ever.
    this.transport.abandon?.(id)
  }

  /** Removes a pending request and its timers; returns it if it was still pending. */
  private settle (id: RequestId): Pending<C> | undefined {
    const entry = this.pending.get(id)
    if (entry === undefined) return undefined
    this.pending.delete(id)
    if (entry.raw === true) this.rawPending--
    if (entry.timer !== undefined) clearTimeout(entry.timer)
    if (entry.onAbort !== undefined) entry.signal?.removeEventListener('abort', entry.onAbort)
    return entry
  }

  /** Whether `message` was the result of a pending raw request, now settled with it. */
  private settleRaw (message: string | RawMessage): boolean {
    const answer = rawAnswer(message)
    if (answer === undefined) return false
    const entry = this.pending.get(answer.id)
    if (entry?.raw !== true) return false
    this.settle(answer.id)
    entry.resolve(answer.result)
    return true
  }

  private receive (raw: unknown, related?: RequestId): void {
    const message = validateMessage(raw)
    if (message === undefined) {
      this.onProtocolError(new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', 'received a message that is not JSON-RPC 2.0'))
      return
    }
    if (isResponse(message)) {
      const entry = this.settle(message.id ?? -1)
      if (entry === undefined) return // late answer to a cancelled or timed-out request
      if ('result' in message) entry.resolve(message.result)
      else entry.reject(new RpcError(message.error.code, message.error.message, message.error.data))
      return
    }
    const context = related === undefined ? undefined : this.pending.get(related)?.context
    if (isRequest(message)) {
      this.answer(message, context)
      return
    }
    if (message.method === 'notifications/cancelled') {
      const id = message.params?.requestId
      if (typeof id === 'string' || typeof id === 'number') this.incoming.get(id)?.abort(new Error('cancelled by the upstream'))
      return
    }
    if (message.method === 'notifications/progress' && message.params !== undefined) {
      const entry = this.pending.get(message.params.progressToken as RequestId)
      entry?.onProgress?.(message.params as ProgressParams)
      return
    }
    this.onNotification(message.method, message.params, context)
  }

  private answer (request: JsonRpcRequest, context: C | undefined): void {
    const controller = new AbortController()
    this.incoming.set(request.id, controller)
    // A cancelled request is not answered (MCP §cancellation); a closed peer cannot be.
    const reply = (message: JsonRpcMessage): Promise<void> | undefined =>
      controller.signal.aborted || this.closed
        ? undefined
        : this.sendOrReject(message).catch(async (err: unknown) => {
          // An answer that cannot be encoded (a client's reply nested too deeply) is replaced by an
          // error, so the upstream is not left waiting for it; the connection is not at fault.
          if (!isEncodingFailure(err) || 'error' in message) throw err
          await this.transport.send(rpcError(request.id, RPC.INTERNAL_ERROR, 'Internal error: the answer cannot be written as JSON'))
        })
    this.onRequest(request, controller.signal, context).then(
      result => reply(rpcResult(request.id, result)),
      (err: unknown) => {
        const e = err instanceof RpcError ? err : new RpcError(RPC.INTERNAL_ERROR, 'internal error')
        return reply(rpcError(request.id, e.code, e.message, e.data))
      }
    ).catch((err: unknown) => {
      // The upstream waits for this answer until its own timeout: say so, or a lost answer is a mystery.
      this.onAnswerLost(request, err instanceof Error ? err : new Error(String(err)))
    }).finally(() => { this.incoming.delete(request.id) })
  }

  private handleClose (): void {
    if (this.closed) return
    this.closed = true
    const err = this.transport.closeError ?? new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the upstream connection closed')
    for (const id of [...this.pending.keys()]) this.settle(id)?.reject(err)
    for (const controller of this.incoming.values()) controller.abort(err)
    this.onClose(this.transport.closeError)
  }
}

function abortError (signal: CancelSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'aborted')
}

export type { JsonRpcMessage }
