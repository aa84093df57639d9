import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import type { JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, RequestId } from '../protocol/json-rpc.ts'
import { type RetryBinding, bindingOf } from './retry-binding.ts'
import type { Session } from './session.ts'

/**
 * A modern (2026-07-28) call whose upstream asked the client something (sampling, elicitation,
 * roots): the upstream's request waits here, and so does the call, until the client retries with
 * its answers or the bound passes.
 */
export class BridgedCall {
  readonly session: Session
  /** The request that started the call; a retry must repeat it. */
  readonly request: JsonRpcRequest
  /** The answer of the call as the dispatcher gives it, whenever the upstream finishes. */
  readonly outcome: Promise<JsonRpcResponse | undefined>
  /** Where the call's notifications go now: the stream of the POST being answered, if any. */
  send: ((message: JsonRpcMessage) => void) | undefined
  /** Requests the upstream sent since the client last answered, by the key given to the client. */
  readonly asked = new Map<string, { id: RequestId, method: string, params: Record<string, unknown> | undefined }>()
  round = 0
  private wake: (() => void) | undefined
  private bound: RetryBinding | undefined

  constructor (session: Session, request: JsonRpcRequest, start: (relay: (message: JsonRpcMessage) => void) => Promise<JsonRpcResponse | undefined>) {
    this.session = session
    this.request = request
    this.outcome = start((message) => { this.relay(message) })
  }

  /** Who may retry it, and with which request: computed once, at its first retry. */
  get binding (): RetryBinding {
    this.bound ??= bindingOf(this.session.principal, this.request)
    return this.bound
  }

  /** What the upstream sent during the call: notifications go on, requests wait for the client. */
  private relay (message: JsonRpcMessage): void {
    if (!('method' in message)) return
    if (!('id' in message) || message.id === undefined) {
      this.send?.(message)
      return
    }
    this.asked.set(String(message.id), { id: message.id, method: message.method, params: message.params })
    // Requests sent together (in one turn) are asked together.
    const wake = this.wake
    this.wake = undefined
    if (wake !== undefined) setImmediate(wake)
  }

  /** The call's answer, or 'input' once the upstream has asked something the client must answer. */
  async next (): Promise<{ done: JsonRpcResponse | undefined } | 'input'> {
    if (this.asked.size > 0) return 'input'
    const input = new Promise<'input'>(resolve => { this.wake = () => { resolve('input') } })
    const result = await Promise.race([this.outcome.then(done => ({ done })), input])
    this.wake = undefined
    return result
  }

  /** Whether every key of `responses` names something that was asked. */
  answers (responses: Record<string, unknown>): boolean {
    for (const key of Object.keys(responses)) if (!this.asked.has(key)) return false
    return true
  }

  /** The client's answers, by key; false when one names nothing that was asked. */
  answer (responses: Record<string, unknown>): boolean {
    if (!this.answers(responses)) return false
    for (const [key, result] of Object.entries(responses)) {
      const asked = this.asked.get(key)
      if (asked === undefined) continue
      this.asked.delete(key)
      this.session.resolveClientRequest({ jsonrpc: '2.0', id: asked.id, result: result as Record<string, unknown> })
    }
    return true
  }
}

export interface InputBridgeOptions {
  /** How long a call waits for the client's retry; then its questions fail and the call is cancelled. */
  ttlMs: number
  /** Calls waiting at once, at most; past that an upstream's question is refused at once. */
  maxPending: number
  /** Signs `requestState`; one per process (a retry is checked where its call waits). */
  key?: Buffer
  /** This replica's tag, named in each requestState so that a retry landing elsewhere finds its way back. */
  replica?: string
}

interface Waiting { call: BridgedCall, timer: NodeJS.Timeout }

/**
 * The calls waiting for a client's retry, bounded in time and number, each behind an opaque,
 * signed `requestState` (`v1.<replica>.<id>.<round>.<mac>`): a client can neither forge nor replay one.
 */
export class InputBridge {
  private readonly waiting = new Map<string, Waiting>()
  private readonly options: InputBridgeOptions
  private readonly key: Buffer
  readonly replica: string

  constructor (options: InputBridgeOptions) {
    this.options = options
    this.key = options.key ?? randomBytes(32)
    this.replica = options.replica ?? 'local'
  }

  /** The replica a requestState names (unchecked: only that replica can tell whether it signed it). */
  static ownerOf (state: unknown): string | undefined {
    if (typeof state !== 'string') return undefined
    const parts = state.split('.')
    return parts.length === 5 && parts[0] === 'v1' && parts[1] !== '' ? parts[1] : undefined
  }

  get size (): number { return this.waiting.size }
  get full (): boolean { return this.waiting.size >= this.options.maxPending }

  /** Parks `call` until the client retries; answers the requestState to give it. */
  park (call: BridgedCall, onExpired: (call: BridgedCall) => void): string {
    const id = randomBytes(12).toString('base64url')
    call.round++
    const timer = setTimeout(() => {
      this.waiting.delete(id)
      onExpired(call)
    }, this.options.ttlMs)
    timer.unref()
    this.waiting.set(id, { call, timer })
    const body = `v1.${this.replica}.${id}.${call.round}`
    return `${body}.${this.mac(body)}`
  }

  /**
   * The call a retry's requestState names, taken out of waiting; 'invalid' when it was not signed
   * here (tampered, or from elsewhere), 'unknown' when it expired or was already used. `admit` says
   * why the retry may not have it (another principal, another request): the call then stays as it
   * was, waiting for its own client's retry, and the reason comes back as `{ refused }`.
   */
  take (state: unknown, admit: (call: BridgedCall) => string | undefined = () => undefined): BridgedCall | 'invalid' | 'unknown' | { refused: string } {
    if (typeof state !== 'string') return 'invalid'
    const cut = state.lastIndexOf('.')
    const body = state.slice(0, cut)
    const mac = Buffer.from(state.slice(cut + 1))
    const expected = Buffer.from(this.mac(body))
    if (cut <= 0 || mac.length !== expected.length || !timingSafeEqual(mac, expected)) return 'invalid'
    const [, replica, id, round] = body.split('.')
    if (replica !== this.replica) return 'invalid'
    const waiting = id === undefined ? undefined : this.waiting.get(id)
    if (waiting === undefined || String(waiting.call.round) !== round) return 'unknown'
    const refused = admit(waiting.call)
    if (refused !== undefined) return { refused }
    clearTimeout(waiting.timer)
    this.waiting.delete(id as string)
    return waiting.call
  }

  /** Shutdown: every waiting call is given up now. */
  close (onExpired: (call: BridgedCall) => void): void {
    for (const { call, timer } of this.waiting.values()) {
      clearTimeout(timer)
      onExpired(call)
    }
    this.waiting.clear()
  }

  private mac (body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url')
  }
}
