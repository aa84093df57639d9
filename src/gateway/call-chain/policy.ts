import type { Metrics } from '../../observability/metrics.ts'
import { RPC, RpcError } from '../../protocol/json-rpc.ts'
import type { CallStep } from './tool-call.ts'

/**
 * The access policy (the session's view) for a resolved tool. A tool the principal may not use is
 * answered exactly like one that does not exist, and so is one outside the session's endpoint;
 * only the policy's refusal is counted as a denial.
 */
export function policyStep (metrics: Pick<Metrics, 'policyDenials'>): CallStep {
  return (call, next) => {
    const { session } = call.ctx
    const name = call.tool
    if (session.view.allows('tools', name)) return next(call)
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
