// One soak client session over raw HTTP: initialize, then requests whose JSON-RPC id is a unique
// token (the answer must carry it back), sampling requests answered by POSTing the reply, cancels,
// and resumes of a dropped stream with Last-Event-ID. Every exchange is judged by the Checker.
import { type Checker, type Op, errorClass, foreignTokens, tokenPattern } from './checker.ts'
import type { Wire } from './wire.ts'
import { type Exchange, type RpcMessage, type SseEvent } from './wire.ts'

export const PROTOCOL_VERSION = '2025-11-25'
/** The gateway's default http.retryMs, which its priming event announces: an SDK client waits it before resuming. */
const RETRY_HINT_MS = 1000
const MAX_RESUMES = 5
/** 404s further apart than this are separate incidents. */
const QUIET_404_MS = 5_000

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

export interface SessionEnv {
  wire: Wire
  checker: Checker
  apiKey: string
  runId: string
  timeoutMs: number
  /**
   * A session that keeps meeting 404 this long is replaced (an SDK client re-initializes at once;
   * waiting shows how long the cluster forgets a session, as the 404s of a replica that does not
   * know it come between the answers of those that do).
   */
  reinitAfterMs: number
}

let counter = 0

export class SoakSession {
  readonly #env: SessionEnv
  sessionId: string | undefined
  /** The first of a run of 404s (a run ends after QUIET_404_MS without one), and the last. */
  #lost404Since: number | undefined
  #last404At = -Infinity

  constructor (env: SessionEnv) {
    this.#env = env
  }

  token (): string {
    return tokenPattern(this.#env.runId, ++counter)
  }

  headers (): Record<string, string> {
    return {
      authorization: `Bearer ${this.#env.apiKey}`,
      'mcp-protocol-version': PROTOCOL_VERSION,
      ...(this.sessionId === undefined ? {} : { 'mcp-session-id': this.sessionId })
    }
  }

  /** Whether the session should be replaced: it has been unknown to the cluster for too long. */
  get lost (): boolean {
    const now = this.#env.checker.now()
    return this.sessionId === undefined || (this.#lost404Since !== undefined && now - this.#last404At < QUIET_404_MS && now - this.#lost404Since > this.#env.reinitAfterMs)
  }

  /** initialize and notifications/initialized; false when it failed (the failure is counted). */
  async open (): Promise<boolean> {
    const { checker, wire, timeoutMs } = this.#env
    const token = this.token()
    this.sessionId = undefined
    this.#lost404Since = undefined
    checker.sent('initialize')
    const sentAt = checker.now()
    const x = await wire.exchange('POST', this.headers(), {
      jsonrpc: '2.0',
      id: token,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: { sampling: {} }, clientInfo: { name: `soak-${token}`, version: '1' } }
    }, { timeoutMs, answerId: token })
    const result = checker.judge('initialize', token, x, r => typeof r.protocolVersion === 'string', sentAt)
    if (result === undefined || x.kind !== 'answer') return false
    if (x.sessionId === undefined) {
      checker.error('initialize', 'initialize without Mcp-Session-Id', JSON.stringify(result).slice(0, 200))
      return false
    }
    this.sessionId = x.sessionId
    await this.notify('notifications/initialized', undefined)
    return true
  }

  async close (): Promise<void> {
    if (this.sessionId === undefined) return
    const x = await this.#env.wire.exchange('DELETE', this.headers(), undefined, { timeoutMs: this.#env.timeoutMs })
    this.sessionId = undefined
    this.#env.checker.sent('delete')
    this.#countPost('delete', x, [200, 202, 204, 404])
  }

  /** A notification or a reply: its HTTP status is its only answer (202). */
  async notify (method: string, params: Record<string, unknown> | undefined): Promise<boolean> {
    this.#env.checker.sent('notify')
    const x = await this.#env.wire.exchange('POST', this.headers(), { jsonrpc: '2.0', method, ...(params === undefined ? {} : { params }) }, { timeoutMs: this.#env.timeoutMs })
    return this.#countPost('notify', x, [202, 200])
  }

  /**
   * One request whose answer is judged by `verify`. `onEvent` sees what comes on its stream before
   * the answer; stray answers and foreign progress are counted as crossed here.
   */
  async request (op: Op, token: string, method: string, params: Record<string, unknown>, verify: (r: Record<string, unknown>) => boolean, extra: { onEvent?: (e: SseEvent) => void, dropWhen?: (events: SseEvent[]) => boolean, timeoutMs?: number, accept?: (x: Exchange) => boolean } = {}): Promise<{ x: Exchange, result?: Record<string, unknown> }> {
    const { checker, wire } = this.#env
    checker.sent(op)
    const sentAt = checker.now()
    const x = await wire.exchange('POST', this.headers(), { jsonrpc: '2.0', id: token, method, params }, {
      timeoutMs: extra.timeoutMs ?? this.#env.timeoutMs,
      answerId: token,
      onEvent: (e) => {
        if (this.#strayServerRequest(op, token, e.message)) return
        if (!checker.strayMessage(op, token, e.message)) extra.onEvent?.(e)
      },
      ...(extra.dropWhen === undefined ? {} : { dropWhen: extra.dropWhen })
    })
    if (x.kind === 'dropped') return { x }
    this.#track404(x)
    if (extra.accept?.(x) === true) {
      checker.ok(op)
      return { x }
    }
    const upstream = method === 'tools/call' && typeof params.name === 'string' ? params.name.split('__')[0] : undefined
    return { x, result: checker.judge(op, token, x, verify, sentAt, '', upstream) }
  }

  /**
   * Resumes a dropped stream on any replica (GET with Last-Event-ID), as the SDK client does: after
   * the stream's retry hint, and again after a resumed stream that ended without the answer, until
   * the answer comes or the soak's timeout is spent. Judged like the request.
   */
  async resume (token: string, lastEventId: string, post: { servedBy?: string | undefined, sentAt: number, upstream: string }, verify: (r: Record<string, unknown>) => boolean, onEvent: (e: SseEvent) => void): Promise<void> {
    const { checker, wire, timeoutMs } = this.#env
    const deadline = checker.now() + timeoutMs
    let last = lastEventId
    for (let attempt = 1; attempt <= MAX_RESUMES; attempt++) {
      await sleep(RETRY_HINT_MS)
      const x = await wire.exchange('GET', { ...this.headers(), 'last-event-id': last }, undefined, {
        timeoutMs: Math.max(1, deadline - checker.now()),
        answerId: token,
        onEvent: (e) => {
          if (e.id !== undefined) last = e.id
          if (!checker.strayMessage('resume', token, e.message)) onEvent(e)
        }
      })
      this.#track404(x)
      if (x.kind === 'ended' && attempt < MAX_RESUMES && checker.now() < deadline) {
        checker.note('resumed streams that ended without the answer (resumed again)')
        continue
      }
      if (x.kind === 'http') {
        checker.error('resume', `${errorClass(x)} (resume GET)`, x.body, x.servedBy)
        return
      }
      checker.judge('resume', token, x, verify, post.sentAt, `; the call's POST was served by ${post.servedBy ?? '?'}, resumed ${attempt} time(s)`, post.upstream)
      return
    }
  }

  /** The sampling reply for a request relayed on `token`'s stream; retried (a real client would) up to 3 times. */
  async reply (id: RpcMessage['id'], result: Record<string, unknown>): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      this.#env.checker.sent('reply')
      const x = await this.#env.wire.exchange('POST', this.headers(), { jsonrpc: '2.0', id, result }, { timeoutMs: this.#env.timeoutMs })
      if (this.#countPost('reply', x, [202, 200])) return
    }
  }

  /** A sampling request on a stream whose call did not ask for one, or that names another token. */
  #strayServerRequest (op: Op, token: string, m: RpcMessage | undefined): boolean {
    if (m?.method !== 'sampling/createMessage') return false
    const prompt = JSON.stringify(m.params ?? {})
    if (op === 'sampling' && prompt.includes(token) && foreignTokens(prompt, token).length === 0) return false
    this.#env.checker.cross(op, token, `a sampling request for another call on this stream: ${prompt.slice(0, 200)}`)
    return true
  }

  #countPost (op: Op, x: Exchange, good: number[]): boolean {
    const { checker } = this.#env
    this.#track404(x)
    if (x.kind === 'accepted' && good.includes(202)) { checker.ok(op); return true }
    if (x.kind === 'http' && good.includes(x.status)) { checker.ok(op); return true }
    if (x.kind === 'answer' && good.includes(200)) { checker.ok(op); return true }
    if (x.kind === 'timeout') { checker.unanswer(op, '-', 'no HTTP status within the timeout', checker.now() - this.#env.timeoutMs); return false }
    checker.error(op, errorClass(x), x.kind === 'http' ? x.body : x.kind === 'net' ? x.message : x.kind, x.servedBy)
    return false
  }

  #track404 (x: Exchange): void {
    if (x.kind !== 'http' || x.status !== 404) return
    const now = this.#env.checker.now()
    if (now - this.#last404At >= QUIET_404_MS) this.#lost404Since = now
    this.#last404At = now
  }
}
