import type { Logger } from 'pino'
import type { WebhookConfig } from '../config/guardrails-schema.ts'
import { SwitchboardError } from '../errors.ts'
import { type CallStep, type ResultSource, type ResultStep, ToolCall } from '../gateway/call-chain/tool-call.ts'
import type { Metrics } from '../observability/metrics.ts'
import { toToolResult } from '../protocol/error-forms.ts'
import { redactUrl } from '../net/url-redaction.ts'
import type { CallContext } from '../session/call-context.ts'
import { refuseResult } from './refusals.ts'
import type { GuardrailHook, HookPhase, HookVerdict } from './webhook-client.ts'

export interface HookDeps {
  readonly hook: GuardrailHook
  readonly config: WebhookConfig
  readonly metrics: Pick<Metrics, 'guardrailWebhook'>
  readonly log: Logger
}

/** What the hook is told about a call: who, which tool, with what (the gateway's ids and names, never a credential). */
function aboutCall (phase: HookPhase, ctx: CallContext, tool: string | undefined, upstream: string, args: unknown): Record<string, unknown> {
  return {
    phase,
    callId: ctx.callId,
    principal: { id: ctx.principal.id, roles: ctx.principal.roles },
    tool: { name: tool ?? null, upstream },
    arguments: args ?? {}
  }
}

/**
 * Counts the verdict, and for one the hook could not give, logs it once (the URL without its
 * secrets, never the headers) and says whether failMode lets the call on.
 */
function judge (deps: HookDeps, phase: HookPhase, verdict: HookVerdict, where: Record<string, unknown>): HookVerdict {
  const outcome = verdict.decision === 'failed' ? verdict.failure : verdict.decision
  deps.metrics.guardrailWebhook.inc({ on: phase, outcome })
  if (verdict.decision === 'failed') {
    const open = deps.config.failMode === 'open'
    const unknown = verdict.unknownFields === undefined ? {} : { unknownFields: verdict.unknownFields }
    deps.log.warn({ ...where, on: phase, outcome, detail: verdict.detail, ...unknown, url: redactUrl(deps.config.url), failMode: deps.config.failMode },
      open ? 'the guardrail hook gave no verdict; failMode open lets the call through' : 'the guardrail hook gave no verdict; failMode closed refuses the call')
  }
  return verdict
}

function denied (verdict: { reason: string | undefined }, subject: string): SwitchboardError {
  const because = verdict.reason === undefined || verdict.reason === '' ? '' : `: ${verdict.reason}`
  return new SwitchboardError('SB_ERR_GUARDRAIL_DENIED', `the guardrail hook refused ${subject}${because}`, { details: verdict.reason === undefined ? {} : { reason: verdict.reason } })
}

function unavailable (failure: string, what: string): SwitchboardError {
  return new SwitchboardError('SB_ERR_GUARDRAIL_UNAVAILABLE', `the guardrail hook could not be asked (${failure}) and guardrails.webhook.failMode is closed; ${what}`, { details: { reason: failure } })
}

/**
 * on: request. The hook sees the call (after the argument checks) and allows it, refuses it, or
 * gives the arguments to send instead: the call's params are replaced as a whole, the client's
 * object is never changed.
 */
export function hookRequestStep (deps: HookDeps): CallStep {
  return async (call, next) => {
    const payload = aboutCall('request', call.ctx, call.tool, call.upstream, call.params.arguments)
    const verdict = judge(deps, 'request', await deps.hook.ask('request', payload, call.ctx.signal), { callId: call.ctx.callId, upstream: call.upstream, tool: call.tool })
    switch (verdict.decision) {
      case 'allow': return await next(call)
      case 'replace':
        call.params = { ...call.params, arguments: verdict.value }
        return await next(call)
      case 'deny':
        call.outcome = 'guardrail'
        return toToolResult(denied(verdict, `this call of tool "${call.tool}"`), { upstream: call.upstream, tool: call.tool })
      default:
        if (deps.config.failMode === 'open') return await next(call)
        call.outcome = 'guardrail'
        return toToolResult(unavailable(verdict.failure, 'the call was not sent to the upstream'), { upstream: call.upstream, tool: call.tool })
    }
  }
}

/**
 * on: result. The hook sees the call and the upstream's result and allows it, withholds it, or
 * gives the result the client gets instead. A tasks/result names its task, not the call: the hook
 * gets no arguments then, and the tool's name only when the gateway knows it.
 */
export function hookResultStep (deps: HookDeps): ResultStep {
  return async (result, source: ResultSource) => {
    const payload: Record<string, unknown> = { ...aboutCall('result', source.ctx, source.tool, source.upstream, source instanceof ToolCall ? source.params.arguments : undefined), result }
    if (!(source instanceof ToolCall)) delete payload.arguments
    const verdict = judge(deps, 'result', await deps.hook.ask('result', payload, source.ctx.signal), { callId: source.ctx.callId, upstream: source.upstream, tool: source.tool })
    const subject = source.tool === undefined ? 'the tool\'s result' : `the result of tool "${source.tool}"`
    switch (verdict.decision) {
      case 'allow': return result
      case 'replace': return verdict.value
      case 'deny': return refuseResult(source, denied(verdict, subject))
      default:
        if (deps.config.failMode === 'open') return result
        return refuseResult(source, unavailable(verdict.failure, `${subject} was withheld`))
    }
  }
}
