import { randomBytes } from 'node:crypto'

/** Calls that may wait for an operator at once; one more is refused (SB_ERR_APPROVAL_UNAVAILABLE). */
export const MAX_PENDING_APPROVALS = 1000
/** An operator's reason is kept (audit, log) up to this many characters; a longer one is a bad request. */
export const MAX_REASON_CHARS = 1000

/** What an operator is shown of a call waiting for them (GET /admin/approvals). */
export interface PendingApprovalView {
  readonly id: string
  readonly callId: string
  /** The caller's principal id. */
  readonly principal: string
  /** The exposed tool name the client called, and the upstream it goes to. */
  readonly tool: string
  readonly upstream: string
  /** Redacted as the audit log redacts them. */
  readonly arguments: unknown
  /** The index of the policy rule that asks. */
  readonly rule: number
  /** ISO 8601 times: when the call began to wait, and when it stops waiting (a denial by timeout). */
  readonly askedAt: string
  readonly waitsUntil: string
}

export type PendingApprovalRequest = Omit<PendingApprovalView, 'id' | 'askedAt' | 'waitsUntil'>

/** An operator's decision, as the admin API takes it. */
export interface OperatorDecision {
  readonly decision: 'approve' | 'deny'
  readonly reason?: string | undefined
}

/** How a wait for an operator ended. */
export type OperatorResult = OperatorDecision | { readonly decision: 'timeout' } | { readonly decision: 'cancelled' }

/** One call waiting for an operator. */
export interface PendingApproval {
  readonly id: string
  /** Settles once: the operator's decision, the timeout, or `cancel()`. */
  readonly settled: Promise<OperatorResult>
  /** The caller gave up: the approval is withdrawn (a later POST for it is a 404). */
  cancel: () => void
}

/** What the admin surface may do with pending approvals. */
export interface OperatorApprovals {
  /** Oldest first. */
  list: () => PendingApprovalView[]
  /** Decides one: 'approved' | 'denied', or undefined when no such approval waits (unknown, decided, expired). */
  decide: (id: string, decision: OperatorDecision) => 'approved' | 'denied' | undefined
}

interface Entry { view: PendingApprovalView, settle: (result: OperatorResult) => void }

export interface PendingApprovalsOptions {
  max?: number
  /** The clock (ms since the epoch); tests may set it. */
  now?: () => number
}

/**
 * The calls of this replica that wait for an operator's decision: bounded in number, each for its
 * own time; whatever settles one (a decision, its timeout, the caller cancelling) removes it. Ids
 * are random and unguessable, though deciding needs the admin token anyway.
 */
export class PendingApprovals implements OperatorApprovals {
  readonly #waiting = new Map<string, Entry>()
  readonly #max: number
  readonly #now: () => number

  constructor (options: PendingApprovalsOptions = {}) {
    this.#max = options.max ?? MAX_PENDING_APPROVALS
    this.#now = options.now ?? Date.now
  }

  get size (): number { return this.#waiting.size }

  /** A call begins to wait for at most `timeoutMs`; undefined when as many wait as may. */
  open (request: PendingApprovalRequest, timeoutMs: number): PendingApproval | undefined {
    if (this.#waiting.size >= this.#max) return undefined
    const id = randomBytes(12).toString('base64url')
    const askedAt = this.#now()
    const view: PendingApprovalView = { id, ...request, askedAt: new Date(askedAt).toISOString(), waitsUntil: new Date(askedAt + timeoutMs).toISOString() }
    let done!: (result: OperatorResult) => void
    const settled = new Promise<OperatorResult>((resolve) => { done = resolve })
    // The call itself waits on it; it must not keep a closing process alive.
    const timer = setTimeout(() => { settle({ decision: 'timeout' }) }, timeoutMs)
    timer.unref()
    const settle = (result: OperatorResult): void => {
      if (this.#waiting.get(id)?.settle !== settle) return
      this.#waiting.delete(id)
      clearTimeout(timer)
      done(result)
    }
    this.#waiting.set(id, { view, settle })
    return { id, settled, cancel: () => { settle({ decision: 'cancelled' }) } }
  }

  list (): PendingApprovalView[] {
    return [...this.#waiting.values()].map(e => e.view)
  }

  decide (id: string, decision: OperatorDecision): 'approved' | 'denied' | undefined {
    const entry = this.#waiting.get(id)
    if (entry === undefined) return undefined
    entry.settle(decision.reason === undefined ? { decision: decision.decision } : { decision: decision.decision, reason: decision.reason })
    return decision.decision === 'approve' ? 'approved' : 'denied'
  }
}

/** An admin request body as a decision, or why it is not one (a 400). */
export function parseOperatorDecision (body: unknown): OperatorDecision | { error: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { error: 'the body must be a JSON object: { "decision": "approve" | "deny", "reason"?: string }' }
  const { decision, reason, ...rest } = body as Record<string, unknown>
  const extra = Object.keys(rest)
  if (extra.length > 0) return { error: `unknown field ${JSON.stringify(extra[0])}: only decision and reason are taken` }
  if (decision !== 'approve' && decision !== 'deny') return { error: 'decision must be "approve" or "deny"' }
  if (reason === undefined) return { decision }
  if (typeof reason !== 'string') return { error: 'reason must be a string' }
  if (reason.length > MAX_REASON_CHARS) return { error: `reason must be at most ${MAX_REASON_CHARS} characters` }
  return { decision, reason }
}
