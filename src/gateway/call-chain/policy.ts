import { DEFAULT_APPROVAL } from '../../config/access-schema.ts'
import { SwitchboardError } from '../../errors.ts'
import type { Metrics } from '../../observability/metrics.ts'
import type { AccessPolicy } from '../../policy/access-policy.ts'
import { callFactsOf } from '../../policy/call-facts.ts'
import { toToolResult } from '../../protocol/error-forms.ts'
import { RPC, RpcError } from '../../protocol/json-rpc.ts'
import type { CallStep } from './tool-call.ts'

/**
 * The access policy for a resolved tool. A tool the principal may not use is answered exactly like
 * one that does not exist, and so is one outside the session's endpoint; only the policy's refusal
 * is counted as a denial. Where rules depend on the call (when, annotations) or ask a human, the
 * visible tool is decided once more on the call's facts: a refusal then is a tool error that names
 * the rule, and an ask hands the call to the approval step.
 */
export function policyStep (metrics: Pick<Metrics, 'policyDenials'>, policy: () => AccessPolicy): CallStep {
  return (call, next) => {
    const { session } = call.ctx
    const name = call.tool
    if (session.view.allows('tools', name)) {
      const current = policy()
      if (!current.decidesAtCall || call.entry === undefined) return next(call)
      const decision = current.decideCall(callFactsOf(call.ctx, call.entry, call.params))
      if (decision.effect === 'allow') return next(call)
      if (decision.effect === 'ask') {
        call.approval = { ...decision.approval ?? DEFAULT_APPROVAL, rule: decision.ruleIndex ?? -1 }
        return next(call)
      }
      call.outcome = 'denied'
      metrics.policyDenials.inc({ kind: 'tools', upstream: call.upstream, name })
      const rule = decision.ruleIndex === undefined ? 'the default' : `rule ${decision.ruleIndex}`
      // A condition that could not be evaluated says why (a missing or mistyped argument): the
      // caller's own arguments, answered to the caller alone.
      const why = decision.conditionError === undefined ? 'with these arguments' : `because its condition could not be evaluated on these arguments (${decision.conditionError})`
      return Promise.resolve(toToolResult(new SwitchboardError('SB_ERR_POLICY_DENIED', `${rule} of the access policy refuses this call ${why}`, { details: { rule: decision.ruleIndex ?? null } }), { upstream: call.upstream, tool: name }))
    }
    if (session.selection?.selects('tools', name) === false) {
      call.outcome = 'unknown_tool'
    } else {
      call.outcome = 'denied'
      metrics.policyDenials.inc({ kind: 'tools', upstream: call.upstream, name })
    }
    // The metric's tool label must not tell a hidden tool from a missing one either.
    call.upstream = ''
    return Promise.reject(new RpcError(RPC.INVALID_PARAMS, `Unknown tool: ${name}`))
  }
}
