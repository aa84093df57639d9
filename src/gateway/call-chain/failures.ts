import type { Logger } from 'pino'
import { CallCancelledError, isSwitchboardError } from '../../errors.ts'
import type { CallOutcome } from '../../observability/metrics.ts'
import type { CancelSignal } from '../../protocol/cancel-signal.ts'
import { RPC, RpcError } from '../../protocol/json-rpc.ts'
import { isCircuitOpen } from '../../upstream/circuit-breaker.ts'
import { unserializableError } from '../forward.ts'
import { type CallStep, type CallToolResult, type ToolCall, gatewayError, seconds } from './tool-call.ts'

/**
 * The outermost step: what the client gets when the rest of the chain failed, and the call's
 * outcome. A refusal a step already decided (its outcome set) passes as it is; an upstream's
 * result that is an error is a tool error. Unexpected failures are logged here, once.
 */
export function failureStep (log: Logger): CallStep {
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
        if (failed.outcome === 'upstream_error' && !(err instanceof RpcError)) log.error({ err, upstream: call.upstream, tool: call.entry?.original }, 'tools/call failed unexpectedly')
        throw failed.error
      }
      call.result = failed.result
      return failed.result
    }
  }
}

interface Failure { outcome: CallOutcome, result?: CallToolResult, error?: Error }

/** What a failed forward means for the client: an isError result, or an error to throw. */
export function failure (err: unknown, call: Pick<ToolCall, 'upstream' | 'tool' | 'entry'> & { ctx: { signal: CancelSignal } }): Failure {
  const { upstream, tool: name } = call
  if (call.ctx.signal.aborted) return { outcome: 'cancelled', error: new CallCancelledError() }
  if (err instanceof RpcError) return { outcome: 'upstream_error', error: err }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TIMEOUT')) {
    const timeoutMs = call.entry?.timeoutMs ?? 0
    return { outcome: 'timeout', result: gatewayError(`Switchboard: upstream "${upstream}" did not answer tool "${name}" within ${timeoutMs} ms, so the call was cancelled. Try again later; if the tool is slow by nature, the operator can raise its timeoutMs.`, err.code, { upstream, timeoutMs }) }
  }
  if (isCircuitOpen(err)) {
    const { retryAfterMs } = err.details
    const when = err.details.circuit === 'open' ? `It will try the upstream again in ${seconds(retryAfterMs)}` : `A probe call is checking whether it has recovered; retry in ${seconds(retryAfterMs)} at the latest`
    return { outcome: 'circuit_open', result: gatewayError(`Switchboard: upstream "${upstream}" failed repeatedly, so the gateway stopped sending it calls for now (circuit open) and tool "${name}" did not run. ${when} (retryAfterMs ${retryAfterMs}).`, err.code, { upstream, circuit: err.details.circuit, retryAfterMs }, { 'switchboard/retryAfterMs': retryAfterMs }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE')) {
    return { outcome: 'unavailable', result: gatewayError(`Switchboard: upstream "${upstream}" is not connected, so tool "${name}" cannot run now. The gateway is reconnecting; try again shortly.`, err.code, { upstream }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_SESSION_LIMIT')) {
    return { outcome: 'unavailable', result: gatewayError(`Switchboard: upstream "${upstream}" gives each session its own connection and already serves as many sessions as it may (maxSessionConnections), so tool "${name}" cannot run now. Try again when another session has ended.`, err.code, { upstream }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_HTTP')) {
    const status = Number(err.details.status)
    return { outcome: 'upstream_error', result: gatewayError(`Switchboard: upstream "${upstream}" answered HTTP ${status} to tool "${name}", so this call failed; its other calls are not affected. Try again; if it persists, the upstream's operator should look at its logs.`, err.code, { upstream, status }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_MESSAGE_UNSERIALIZABLE')) return { outcome: 'invalid', error: unserializableError(err, upstream, 'tools/call') }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_PROTOCOL')) {
    return { outcome: 'upstream_error', result: gatewayError(`Switchboard: upstream "${upstream}" answered tool "${name}" with something that is not a JSON-RPC answer, so this call failed; its other calls are not affected. Try again; if it persists, the upstream's operator should look at its logs.`, err.code, { upstream }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED')) {
    return { outcome: 'unavailable', result: gatewayError(`Switchboard: the connection to upstream "${upstream}" was lost while tool "${name}" was running; the call may or may not have taken effect. The gateway is reconnecting.`, err.code, { upstream }) }
  }
  return { outcome: 'upstream_error', error: new RpcError(RPC.INTERNAL_ERROR, 'internal error') }
}
