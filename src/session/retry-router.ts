import { randomBytes } from 'node:crypto'
import type { Principal } from '../auth/principal.ts'
import { CallSignal, type CancelSignal } from '../protocol/cancel-signal.ts'
import { type JsonRpcMessage, type JsonRpcRequest, type JsonRpcResponse, RPC, rpcError } from '../protocol/json-rpc.ts'
import type { RetryMessage, SessionStore } from './session-store.ts'

/** A retry's answer and the HTTP status it goes with. */
export interface RetryAnswer { status: number, response: JsonRpcResponse | undefined }

/** Serves a forwarded request here: a retry of a call that runs on this replica, or (with its session's id) a session's request about something held here. */
export type RetryHandler = (request: JsonRpcRequest, principal: Principal, send: (message: JsonRpcMessage) => void, gone: CancelSignal, sessionId?: string) => Promise<RetryAnswer>

/**
 * What is forwarded: a 2026-07-28 retry, a session's request about a task another replica holds, or
 * a resume of a POST's SSE stream whose call runs on another replica (see follow-elsewhere.ts).
 */
export type ForwardKind = 'retry' | 'task' | 'resume'

/** The replica running a forwarded retry says it is alive this often, and is given up after SILENCE_BEATS of silence. */
const HEARTBEAT_MS = 2_000
const SILENCE_BEATS = 3

interface Forwarded {
  id: JsonRpcRequest['id']
  resolve: (answer: RetryAnswer) => void
  send: (message: JsonRpcMessage) => void
  heard: number
}

/**
 * A 2026-07-28 client's retry (input_required answered) may land on any replica, while the call it
 * resumes waits in the process that asked. The replica it lands on forwards it over the session
 * store's bus to the one named in its requestState and relays back what comes: the call's
 * notifications, then its answer. The owner checks the requestState itself, so a forged owner name
 * gets only a refusal from whoever bears it. A client that closes its request cancels the call
 * there; an owner that falls silent (stopped, killed) is given up after a few missed heartbeats.
 */
export class RetryRouter {
  private readonly store: SessionStore
  private readonly forwarded = new Map<string, Forwarded>()
  /** Retries running here for another replica: their tickets, to cancel them. */
  private readonly running = new Map<string, { from: string, gone: CallSignal }>()
  private readonly handlers: Partial<Record<ForwardKind, RetryHandler>> = {}
  private readonly timer: NodeJS.Timeout
  private readonly onRouted: (kind: ForwardKind, outcome: 'published' | 'delivered' | 'ignored') => void

  constructor (store: SessionStore, onRouted: (kind: ForwardKind, outcome: 'published' | 'delivered' | 'ignored') => void = () => {}) {
    this.store = store
    this.onRouted = onRouted
    store.onRetry((message) => { this.received(message) })
    this.timer = setInterval(() => { this.beat() }, HEARTBEAT_MS)
    this.timer.unref()
  }

  serve (kind: ForwardKind, handler: RetryHandler): void {
    this.handlers[kind] = handler
  }

  /**
   * Sends `request` to the replica `owner` and resolves with the answer it relays back; with a
   * `sessionId` it is served there in that session (a task request), without as a retry.
   */
  async forward (owner: string, request: JsonRpcRequest, principal: Principal, send: (message: JsonRpcMessage) => void, gone: CancelSignal, sessionId?: string, as?: 'resume'): Promise<RetryAnswer> {
    const ticket = randomBytes(12).toString('base64url')
    const answer = new Promise<RetryAnswer>((resolve) => {
      this.forwarded.set(ticket, { id: request.id, resolve, send, heard: Date.now() })
    })
    const cancel = (): void => { this.store.publish({ kind: 'retry-cancel', ticket }, owner) }
    gone.addEventListener('abort', cancel)
    this.store.publish({ kind: 'retry', ticket, from: this.store.replica, request, principal, ...(sessionId === undefined ? {} : { sessionId }), ...(as === undefined ? {} : { as }) }, owner)
    this.onRouted(as ?? (sessionId === undefined ? 'retry' : 'task'), 'published')
    try {
      return await answer
    } finally {
      gone.removeEventListener('abort', cancel)
      this.forwarded.delete(ticket)
    }
  }

  /** Shutdown: retries waiting on other replicas are answered now. */
  close (): void {
    clearInterval(this.timer)
    for (const waiting of this.forwarded.values()) waiting.resolve(lost(waiting, 'this gateway replica is shutting down'))
    for (const { gone } of this.running.values()) gone.abort(new Error('the gateway replica is shutting down'))
  }

  private received (message: RetryMessage): void {
    if (message.kind === 'retry') {
      void this.run(message.ticket, message.from, message.request, message.principal, message.sessionId, message.as)
      return
    }
    if (message.kind === 'retry-cancel') {
      this.running.get(message.ticket)?.gone.abort(new Error('the client closed its request'))
      return
    }
    const waiting = this.forwarded.get(message.ticket)
    if (waiting === undefined) {
      this.onRouted('retry', 'ignored')
      return
    }
    waiting.heard = Date.now()
    if (message.kind === 'retry-notice') waiting.send(message.message)
    else if (message.kind === 'retry-answer') waiting.resolve({ status: message.status, response: message.response })
  }

  /** A retry forwarded here: served as if it had landed here, everything it says sent back to `from`. */
  private async run (ticket: string, from: string, request: JsonRpcRequest, principal: Principal, sessionId: string | undefined, as: 'resume' | undefined): Promise<void> {
    const kind: ForwardKind = as ?? (sessionId === undefined ? 'retry' : 'task')
    const handler = this.handlers[kind]
    if (handler === undefined) return
    this.onRouted(kind, 'delivered')
    const gone = new CallSignal()
    this.running.set(ticket, { from, gone })
    this.store.publish({ kind: 'retry-alive', ticket }, from)
    try {
      const { status, response } = await handler(request, principal, (message) => { this.store.publish({ kind: 'retry-notice', ticket, message }, from) }, gone, sessionId)
      this.store.publish(response === undefined ? { kind: 'retry-answer', ticket, status } : { kind: 'retry-answer', ticket, status, response }, from)
    } catch {
      this.store.publish({ kind: 'retry-answer', ticket, status: 200, response: rpcError(request.id, RPC.INTERNAL_ERROR, 'Switchboard: internal error') }, from)
    } finally {
      this.running.delete(ticket)
    }
  }

  /** Says the retries running here are alive; gives up those whose owner fell silent. */
  private beat (): void {
    for (const [ticket, { from, gone }] of this.running) {
      if (!gone.aborted) this.store.publish({ kind: 'retry-alive', ticket }, from)
    }
    const silent = Date.now() - HEARTBEAT_MS * SILENCE_BEATS
    for (const waiting of this.forwarded.values()) {
      if (waiting.heard < silent) waiting.resolve(lost(waiting, 'the gateway replica running this call does not answer (it may have stopped)'))
    }
  }
}

function lost (waiting: Forwarded, why: string): RetryAnswer {
  return { status: 200, response: rpcError(waiting.id, RPC.INTERNAL_ERROR, `Switchboard: ${why}; the call is lost, start it again`) }
}
