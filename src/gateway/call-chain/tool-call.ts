import type { ApprovalRecord } from '../../approval/approval-record.ts'
import type { CatalogEntry } from '../../catalog/catalog.ts'
import type { ApprovalConfig } from '../../config/access-schema.ts'
import type { CallOutcome } from '../../observability/metrics.ts'
import type { CallContext } from '../../session/call-context.ts'

export type CallToolResult = Record<string, unknown>

/**
 * One tools/call on its way through the chain: what the client asked, for whom, and what the steps
 * found out about it. `entry` and `upstream` are set by resolving the name; `outcome` stays 'ok'
 * until a step ends the call otherwise (a refusal, a failure), and `result` is what the client got.
 */
export class ToolCall {
  /**
   * The request's params as the client sent them; a guard that rewrites the arguments (the
   * guardrail hook) replaces the whole object, never a field of the client's.
   */
  params: Record<string, unknown>
  /** The exposed name the client called. */
  readonly tool: string
  readonly ctx: CallContext
  /** The catalog entry the name resolved to. */
  entry: CatalogEntry | undefined = undefined
  /** The upstream as metrics name it: '' while unresolved, and for a name refused as unknown. */
  upstream = ''
  outcome: CallOutcome = 'ok'
  /** Set by the policy step when a rule with effect ask matched: the approval step holds the call until a human decides. */
  approval: (ApprovalConfig & { readonly rule: number }) | undefined = undefined
  /** Set by the approval step: who was asked, the answer, how long it took (the audit line's `approval`). */
  approvalRecord: ApprovalRecord | undefined = undefined
  result: CallToolResult | undefined = undefined

  constructor (params: Record<string, unknown>, tool: string, ctx: CallContext) {
    this.params = params
    this.tool = tool
    this.ctx = ctx
  }
}

/** The rest of the chain after a step. */
export type Next = (call: ToolCall) => Promise<CallToolResult>

/**
 * One step of the tools/call chain: it may answer itself (a refusal, as a result or a thrown
 * error) or pass the call on to `next`, and may look at or change what comes back.
 */
export type CallStep = (call: ToolCall, next: Next) => Promise<CallToolResult>

/** Where a result the client is about to get came from: a tools/call, or a tasks/result of one. */
export interface ResultSource {
  readonly ctx: CallContext
  readonly upstream: string
  /** The exposed tool name, when known (a tasks/result names only its task). */
  readonly tool: string | undefined
}

/**
 * A step of the result side: it sees (and may replace) an upstream's tool result before the client
 * does, whether it comes as the answer to tools/call or as the payload of tasks/result.
 */
export type ResultStep = (result: CallToolResult, source: ResultSource) => Promise<CallToolResult>
