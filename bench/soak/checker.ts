// Judges every exchange of the soak against the request that asked: its JSON-RPC id and the token its
// content must carry. Counts answers, errors by class, crossed answers (an answer that belongs to
// another request, or does not carry the asker's token) and unanswered requests (neither answer nor
// error within the soak's timeout), and keeps the time of each, for the per-fault windows.
import type { Exchange, RpcMessage } from './wire.ts'

export type Op = 'initialize' | 'echo' | 'list' | 'progress' | 'sampling' | 'cancel' | 'resume' | 'reply' | 'notify' | 'delete'

export interface ErrorClass { count: number, sample: string, ops: Partial<Record<Op, number>> }
export interface OpStats { sent: number, ok: number, errors: number, crossed: number, unanswered: number }
export interface Incident { at: number, sentAt?: number, op: Op, token: string, detail: string }

const TOKEN = /sk[a-z0-9]{4}-\d+/g
const KEEP_INCIDENTS = 20

export class Checker {
  readonly t0 = performance.now()
  readonly ops = new Map<Op, OpStats>()
  readonly errors = new Map<string, ErrorClass>()
  /** When each error came back (ms since start), with its class. */
  readonly errorTimes: Array<{ at: number, cls: string, by?: string }> = []
  /** When each successful answer came back (ms since start). */
  readonly okTimes: number[] = []
  readonly crossed: Incident[] = []
  readonly unanswered: Incident[] = []
  /** From the send of each unanswered request (of the call it resumes, for a resume) to its deadline, to tell which fault it met. */
  readonly unansweredSpans: Array<{ from: number, to: number }> = []
  crossedCount = 0
  unansweredCount = 0
  /** Facts that are neither errors nor failures (cancel honoured or not, progress seen...). */
  readonly notes = new Map<string, number>()
  /** Errors by the replica that answered them (HAProxy's x-served-by; "-" when no replica answered). */
  readonly errorsByReplica = new Map<string, number>()

  now (): number {
    return Math.round(performance.now() - this.t0)
  }

  get requests (): number {
    let n = 0
    for (const s of this.ops.values()) n += s.sent
    return n
  }

  get answered (): number {
    return this.okTimes.length
  }

  note (what: string, n = 1): void {
    this.notes.set(what, (this.notes.get(what) ?? 0) + n)
  }

  sent (op: Op): void {
    this.#stats(op).sent++
  }

  ok (op: Op): void {
    this.#stats(op).ok++
    this.okTimes.push(this.now())
  }

  error (op: Op, cls: string, sample: string, servedBy?: string): void {
    this.#stats(op).errors++
    this.errorsByReplica.set(servedBy ?? '-', (this.errorsByReplica.get(servedBy ?? '-') ?? 0) + 1)
    const at = this.now()
    this.errorTimes.push({ at, cls, ...(servedBy === undefined ? {} : { by: servedBy }) })
    const entry = this.errors.get(cls) ?? { count: 0, sample: sample.slice(0, 200), ops: {} }
    entry.count++
    entry.ops[op] = (entry.ops[op] ?? 0) + 1
    this.errors.set(cls, entry)
  }

  cross (op: Op, token: string, detail: string): void {
    this.#stats(op).crossed++
    this.crossedCount++
    if (this.crossed.length < KEEP_INCIDENTS) this.crossed.push({ at: this.now(), op, token, detail: detail.slice(0, 300) })
  }

  unanswer (op: Op, token: string, detail: string, sentAt?: number): void {
    this.#stats(op).unanswered++
    this.unansweredCount++
    this.unansweredSpans.push({ from: sentAt ?? this.now(), to: this.now() })
    if (this.unanswered.length < KEEP_INCIDENTS) this.unanswered.push({ at: this.now(), ...(sentAt === undefined ? {} : { sentAt }), op, token, detail: detail.slice(0, 300) })
  }

  /**
   * The common judgement of an exchange that should end with the answer to `token`: a stray answer
   * or a foreign token is crossed, no answer in time is unanswered, an error is classed; an answer
   * is handed to `verify` (true: it carries what was asked). Returns the answer when it was correct.
   */
  judge (op: Op, token: string, x: Exchange, verify: (result: Record<string, unknown>) => boolean, sentAt: number, context = '', upstream?: string): Record<string, unknown> | undefined {
    // A tool's error names its upstream: a breaker or a catalog gap is one upstream's on one replica.
    const on = upstream === undefined ? '' : ` [${upstream}]`
    if (x.kind === 'timeout') {
      this.unanswer(op, token, `no answer within the timeout (${x.events.length} events, served by ${x.servedBy ?? 'nobody'})${context}`, sentAt)
      return undefined
    }
    if (x.kind !== 'answer') {
      const cls = errorClass(x)
      this.error(op, cls, describe(x), x.servedBy)
      return undefined
    }
    const m = x.message
    if (m.id !== token) {
      this.cross(op, token, `answer id ${JSON.stringify(m.id)}: ${JSON.stringify(m).slice(0, 200)}`)
      return undefined
    }
    if (m.error !== undefined) {
      this.error(op, rpcErrorClass(m) + on, JSON.stringify(m.error), x.servedBy)
      return undefined
    }
    const result = m.result ?? {}
    if (result.isError === true) {
      this.error(op, toolErrorClass(result) + on, JSON.stringify(result).slice(0, 300), x.servedBy)
      return undefined
    }
    if (!verify(result)) {
      this.cross(op, token, `answer does not carry its token: ${JSON.stringify(result).slice(0, 200)}`)
      return undefined
    }
    this.ok(op)
    return result
  }

  /** A message on this request's stream that belongs to another request. */
  strayMessage (op: Op, token: string, m: RpcMessage | undefined): boolean {
    if (m === undefined) return false
    const isAnswer = m.method === undefined && (m.result !== undefined || m.error !== undefined)
    if (isAnswer && m.id !== token) {
      this.cross(op, token, `another request's answer on this stream: ${JSON.stringify(m).slice(0, 200)}`)
      return true
    }
    if (m.method === 'notifications/progress' && m.params?.progressToken !== token) {
      this.cross(op, token, `another request's progress on this stream: ${JSON.stringify(m.params)}`)
      return true
    }
    return false
  }

  #stats (op: Op): OpStats {
    let s = this.ops.get(op)
    if (s === undefined) {
      s = { sent: 0, ok: 0, errors: 0, crossed: 0, unanswered: 0 }
      this.ops.set(op, s)
    }
    return s
  }
}

/** The tokens an answer carries, other than `own`. */
export function foreignTokens (text: string, own: string): string[] {
  return (text.match(TOKEN) ?? []).filter(t => t !== own)
}

export function tokenPattern (runId: string, n: number): string {
  return `sk${runId}-${n}`
}

export function errorClass (x: Exchange): string {
  switch (x.kind) {
    case 'http': {
      const code = sbCodeIn(x.body)
      return `HTTP ${x.status}${code === undefined ? '' : ` ${code}`}`
    }
    case 'ended': return 'stream ended without answer'
    case 'dropped': return 'stream dropped'
    case 'net': return `connection ${x.code}`
    case 'accepted': return 'HTTP 202 instead of an answer'
    case 'timeout': return 'timeout'
    case 'answer': return x.message.error === undefined ? toolErrorClass(x.message.result ?? {}) : rpcErrorClass(x.message)
  }
}

function describe (x: Exchange): string {
  if (x.kind === 'http') return x.body
  if (x.kind === 'net') return `${x.code}: ${x.message}`
  return x.kind
}

export function rpcErrorClass (m: RpcMessage): string {
  const code = m.error?.code
  const sb = sbCodeIn(JSON.stringify(m.error?.data ?? ''))
  const message = String(m.error?.message ?? '')
  // The message names what happened when the code is generic (-32602 "Unknown tool", -32603 ...).
  const gist = sb ?? (/unknown tool/i.test(message) ? '"Unknown tool"' : /session not found/i.test(message) ? '"Session not found"' : undefined)
  return `JSON-RPC ${String(code)}${gist === undefined ? '' : ` ${gist}`}`
}

export function toolErrorClass (result: Record<string, unknown>): string {
  const meta = result._meta as Record<string, { code?: unknown }> | undefined
  const code = meta?.['switchboard/error']?.code
  return `isError ${typeof code === 'string' ? code : '(no code)'}`
}

function sbCodeIn (text: string): string | undefined {
  return /SB_ERR_[A-Z_]+/.exec(text)?.[0]
}
