import type { Logger } from 'pino'
import type { ApprovalConfig } from '../config/access-schema.ts'
import { CallCancelledError, SwitchboardError } from '../errors.ts'
import type { CallStep, CallToolResult, ToolCall } from '../gateway/call-chain/tool-call.ts'
import type { CallOutcome, Metrics } from '../observability/metrics.ts'
import { toToolResult } from '../protocol/error-forms.ts'
import { MODERN_PROTOCOL_VERSIONS } from '../protocol/modern.ts'
import { approvalQuestion, declaresFormElicitation } from './approval-question.ts'
import type { ApprovalOutcome, ApprovalRecord } from './approval-record.ts'
import { askClientApproval } from './ask-client.ts'
import type { PendingApprovals } from './pending-approvals.ts'
import type { SessionApprovals } from './session-approvals.ts'
import { waitForOperator } from './wait-operator.ts'
import { progressWhileWaiting } from './waiting-progress.ts'

export interface ApprovalStepDeps {
  metrics: Pick<Metrics, 'approvals' | 'approvalsPending' | 'notifications'>
  sessions: SessionApprovals
  pending: PendingApprovals
  /** The arguments as the audit log would show them (its redact and redactPatterns). */
  redact: (args: unknown) => unknown
  log?: Logger | undefined
  /** How often a caller waiting for an operator hears progress (tests shorten it). */
  progressEveryMs?: number | undefined
}

type Ask = ApprovalConfig & { readonly rule: number }

/** How the approval ended: the audit's record, and the refusal when the call must not run. */
interface Verdict {
  record: ApprovalRecord
  refusal?: SwitchboardError | 'cancelled'
}

const CALL_OUTCOMES: Readonly<Record<string, CallOutcome>> = {
  SB_ERR_APPROVAL_DENIED: 'approval_denied',
  SB_ERR_APPROVAL_TIMEOUT: 'approval_timeout',
  SB_ERR_APPROVAL_UNAVAILABLE: 'approval_unavailable'
}

/**
 * Effect ask: a call the policy step marked (`call.approval`) is held until a human approves it,
 * the calling client's user (via client) or an operator through the admin API (via operator).
 * Anything but an approval refuses the call with a tool error that says why; nothing is ever let
 * through because nobody could be asked. Every decision is recorded on the call (the audit line)
 * and counted.
 */
export function approvalStep (deps: ApprovalStepDeps): CallStep {
  return async (call, next) => {
    const ask = call.approval
    if (ask === undefined) return await next(call)
    const verdict = ask.via === 'operator' ? await byOperator(call, ask, deps) : await byClient(call, ask, deps)
    call.approvalRecord = verdict.record
    // A call an earlier "for this session" covers was not asked: it is audited, not counted.
    if (verdict.record.by !== 'session') deps.metrics.approvals.inc({ upstream: call.upstream, via: ask.via, outcome: verdict.record.outcome })
    const { refusal } = verdict
    if (refusal === undefined) return await next(call)
    if (refusal === 'cancelled') throw new CallCancelledError()
    call.outcome = CALL_OUTCOMES[refusal.code] ?? 'approval_denied'
    return toToolResult(refusal, { upstream: call.upstream, tool: call.tool }) as CallToolResult
  }
}

/** "tool "x" needs a human's approval (policy rule 2)": how every refusal begins. */
function needs (call: ToolCall, ask: Ask): string {
  return `tool "${call.tool}" needs a human's approval (policy rule ${ask.rule})`
}

function refused (code: 'SB_ERR_APPROVAL_DENIED' | 'SB_ERR_APPROVAL_TIMEOUT' | 'SB_ERR_APPROVAL_UNAVAILABLE', message: string, ask: Ask, extra: Record<string, unknown> = {}): SwitchboardError {
  return new SwitchboardError(code, message, { details: { rule: ask.rule, via: ask.via, ...extra } })
}

function record (ask: Ask, outcome: ApprovalOutcome, waitedMs: number, extra: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return { via: ask.via, outcome, waitedMs: Math.round(waitedMs), rule: ask.rule, ...extra }
}

async function byClient (call: ToolCall, ask: Ask, deps: ApprovalStepDeps): Promise<Verdict> {
  const { session } = call.ctx
  if (deps.sessions.has(session.id, call.tool)) return { record: record(ask, 'approved_session', 0, { by: 'session' }) }
  if (!declaresFormElicitation(session.clientCapabilities)) {
    return {
      record: record(ask, 'unavailable', 0),
      refusal: refused('SB_ERR_APPROVAL_UNAVAILABLE', `${needs(call, ask)}, and this client cannot be asked: it declared no form elicitation. Use a client that supports elicitation; the tool did not run`, ask)
    }
  }
  // A 2026-07-28 request is its own session: there is nothing to remember an answer for.
  const sessionChoice = !MODERN_PROTOCOL_VERSIONS.includes(session.protocolVersion ?? '')
  const question = approvalQuestion({ tool: call.tool, upstream: call.upstream, arguments: deps.redact(call.params.arguments), sessionChoice, protocolVersion: session.protocolVersion })
  const started = performance.now()
  deps.metrics.approvalsPending.inc({ via: 'client' })
  const stop = progressWhileWaiting(call.ctx, call.params, 'waiting for your approval', deps.metrics, deps.progressEveryMs)
  let answer
  try {
    answer = await askClientApproval(call.ctx, question, sessionChoice, ask.timeoutMs, deps.log)
  } finally {
    stop()
    deps.metrics.approvalsPending.dec({ via: 'client' })
  }
  const waited = performance.now() - started
  switch (answer) {
    case 'once': return { record: record(ask, 'approved', waited, { by: 'client' }) }
    case 'session':
      deps.sessions.remember(session.id, call.tool)
      return { record: record(ask, 'approved_session', waited, { by: 'client' }) }
    case 'deny': return { record: record(ask, 'denied', waited, { by: 'client' }), refusal: refused('SB_ERR_APPROVAL_DENIED', `${needs(call, ask)} and the user denied it; it did not run`, ask) }
    case 'timeout': return { record: record(ask, 'timeout', waited), refusal: refused('SB_ERR_APPROVAL_TIMEOUT', `${needs(call, ask)} and no answer came within ${ask.timeoutMs} ms; it did not run`, ask, { timeoutMs: ask.timeoutMs }) }
    case 'cancelled': return { record: record(ask, 'cancelled', waited), refusal: 'cancelled' }
    case 'failed': return { record: record(ask, 'unavailable', waited), refusal: refused('SB_ERR_APPROVAL_UNAVAILABLE', `${needs(call, ask)}, and the client could not be asked; the tool did not run`, ask) }
  }
}

async function byOperator (call: ToolCall, ask: Ask, deps: ApprovalStepDeps): Promise<Verdict> {
  const { ctx } = call
  const pending = deps.pending.open({ callId: ctx.callId, principal: ctx.principal.id, tool: call.tool, upstream: call.upstream, arguments: deps.redact(call.params.arguments), rule: ask.rule }, ask.timeoutMs)
  if (pending === undefined) {
    deps.log?.warn({ tool: call.tool, upstream: call.upstream }, 'too many calls wait for an operator\'s approval; refusing one more')
    return { record: record(ask, 'unavailable', 0), refusal: refused('SB_ERR_APPROVAL_UNAVAILABLE', `${needs(call, ask)}, and too many calls already wait for an operator; try again later. The tool did not run`, ask) }
  }
  deps.log?.info({ approval: pending.id, callId: ctx.callId, principal: ctx.principal.id, tool: call.tool, upstream: call.upstream, rule: ask.rule }, 'a call waits for an operator\'s approval')
  const started = performance.now()
  deps.metrics.approvalsPending.inc({ via: 'operator' })
  let result
  try {
    result = await waitForOperator(pending, ctx, call.params, deps.metrics, deps.progressEveryMs)
  } finally {
    deps.metrics.approvalsPending.dec({ via: 'operator' })
  }
  const waited = performance.now() - started
  const id = pending.id
  switch (result.decision) {
    case 'approve': return { record: record(ask, 'approved', waited, { by: 'operator', id, ...reasonOf(result.reason) }) }
    case 'deny': {
      const said = result.reason === undefined ? '' : `: "${result.reason}"`
      return { record: record(ask, 'denied', waited, { by: 'operator', id, ...reasonOf(result.reason) }), refusal: refused('SB_ERR_APPROVAL_DENIED', `${needs(call, ask)} and an operator denied it${said}; it did not run`, ask, { approval: id, ...reasonOf(result.reason) }) }
    }
    case 'timeout': return { record: record(ask, 'timeout', waited, { id }), refusal: refused('SB_ERR_APPROVAL_TIMEOUT', `${needs(call, ask)} and no operator decided within ${ask.timeoutMs} ms; it did not run`, ask, { approval: id, timeoutMs: ask.timeoutMs }) }
    case 'cancelled': return { record: record(ask, 'cancelled', waited, { id }), refusal: 'cancelled' }
  }
}

function reasonOf (reason: string | undefined): { reason?: string } {
  return reason === undefined ? {} : { reason }
}
