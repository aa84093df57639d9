import { CallCancelledError, isSwitchboardError } from '../../errors.ts'
import type { CallOutcome } from '../../observability/metrics.ts'
import type { CancelSignal } from '../../protocol/cancel-signal.ts'
import { isCircuitOpen } from '../../upstream/circuit-breaker.ts'
import { toolCallAnswer } from '../../protocol/error-forms.ts'
import type { CallStep, CallToolResult, ToolCall } from './tool-call.ts'

/**
 * The outermost step: what the client gets when the rest of the chain failed, and the call's
 * outcome. A refusal a step already decided (its outcome set) passes as it is; an upstream's
 * result that is an error is a tool error. An unexpected failure becomes a bare -32603 whose cause the
 * dispatcher logs, once.
 */
export function failureStep (): CallStep {
  return async (call, next) => {
    try {
      const result = await next(call)
      if (call.outcome === 'ok' && result.isError === true) call.outcome = 'tool_error'
      call.result = result
      return result
    } catch (err: unknown) {
      if (call.outcome !== 'ok') throw err
      const failed = failure(err, call)
      call.outcome = failed.outcome
      if (failed.result === undefined) {
        throw failed.error
      }
      call.result = failed.result
      return failed.result
    }
  }
}

interface Failure { outcome: CallOutcome, result?: CallToolResult, error?: Error }

/** What a failed forward means for the client (src/protocol/error-forms.ts): an isError result, or an error to throw. */
export function failure (err: unknown, call: Pick<ToolCall, 'upstream' | 'tool' | 'entry'> & { ctx: { signal: CancelSignal } }): Failure {
  if (call.ctx.signal.aborted) return { outcome: 'cancelled', error: new CallCancelledError() }
  const answer = toolCallAnswer(err, { upstream: call.upstream, tool: call.tool, timeoutMs: call.entry?.timeoutMs ?? 0, method: 'tools/call' })
  return 'result' in answer ? { outcome: outcomeOf(err), result: answer.result } : { outcome: outcomeOf(err), error: answer.error }
}

/** The call's outcome label (metrics, audit, spans) for a failure. */
function outcomeOf (err: unknown): CallOutcome {
  if (isCircuitOpen(err)) return 'circuit_open'
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TIMEOUT')) return 'timeout'
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE') || isSwitchboardError(err, 'SB_ERR_SESSION_LIMIT') || isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED')) return 'unavailable'
  if (isSwitchboardError(err, 'SB_ERR_MESSAGE_UNSERIALIZABLE')) return 'invalid'
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED')) return 'connect_required'
  return 'upstream_error'
}
