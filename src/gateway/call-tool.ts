import type { Logger } from 'pino'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import { isSwitchboardError } from '../errors.ts'
import type { CallOutcome, Metrics } from '../observability/metrics.ts'
import { RPC, RpcError, isRecord } from '../protocol/json-rpc.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import { CallCancelledError, forward, type RequestContext } from './forward.ts'

export interface CallToolDeps { catalogs: CatalogStore, pool: UpstreamPool, metrics: Metrics, log: Logger }

export type CallToolResult = Record<string, unknown>

function gatewayError (text: string, code: string, details: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: { 'switchboard/error': { code, ...details } } }
}

/**
 * tools/call as one straight line: resolve the exposed name in the catalog, forward with the
 * tool's timeout, observe. The upstream's result comes back exactly as it was sent; failures of the
 * path (timeout, upstream down or lost) become isError results that say what happened.
 */
export function createCallTool (deps: CallToolDeps) {
  const { catalogs, pool, metrics } = deps
  return async function callTool (params: Record<string, unknown>, ctx: RequestContext): Promise<CallToolResult> {
    const started = performance.now()
    const name = params.name
    if (typeof name !== 'string' || (params.arguments !== undefined && !isRecord(params.arguments))) {
      throw new RpcError(RPC.INVALID_PARAMS, 'tools/call needs a string name and an object of arguments')
    }
    const entry = catalogs.tools.resolve(name)
    if (entry === undefined) {
      metrics.observeCall('', '', 'unknown_tool', (performance.now() - started) / 1000)
      throw new RpcError(RPC.INVALID_PARAMS, `Unknown tool: ${name}`)
    }
    const { upstream, original, timeoutMs } = entry
    let outcome: CallOutcome = 'ok'
    try {
      const result = await forward(pool, metrics, upstream, 'tools/call', { ...params, name: original }, ctx, timeoutMs)
      if (result.isError === true) outcome = 'tool_error'
      return result
    } catch (err: unknown) {
      if (ctx.signal.aborted) {
        outcome = 'cancelled'
        throw new CallCancelledError()
      }
      if (err instanceof RpcError) {
        outcome = 'upstream_error'
        throw err
      }
      if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TIMEOUT')) {
        outcome = 'timeout'
        return gatewayError(`Switchboard: upstream "${upstream}" did not answer tool "${name}" within ${timeoutMs} ms, so the call was cancelled. Try again later; if the tool is slow by nature, the operator can raise its timeoutMs.`, err.code, { upstream, timeoutMs })
      }
      if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE')) {
        outcome = 'unavailable'
        return gatewayError(`Switchboard: upstream "${upstream}" is not connected, so tool "${name}" cannot run now. The gateway is reconnecting; try again shortly.`, err.code, { upstream })
      }
      if (isSwitchboardError(err, 'SB_ERR_SESSION_LIMIT')) {
        outcome = 'unavailable'
        return gatewayError(`Switchboard: upstream "${upstream}" gives each session its own connection and already serves as many sessions as it may (maxSessionConnections), so tool "${name}" cannot run now. Try again when another session has ended.`, err.code, { upstream })
      }
      if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED')) {
        outcome = 'unavailable'
        return gatewayError(`Switchboard: the connection to upstream "${upstream}" was lost while tool "${name}" was running; the call may or may not have taken effect. The gateway is reconnecting.`, err.code, { upstream })
      }
      outcome = 'upstream_error'
      deps.log.error({ err, upstream, tool: original }, 'tools/call failed unexpectedly')
      throw new RpcError(RPC.INTERNAL_ERROR, 'internal error')
    } finally {
      metrics.observeCall(upstream, name, outcome, (performance.now() - started) / 1000)
    }
  }
}
