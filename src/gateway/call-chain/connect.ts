import type { ConnectGate } from '../../credentials/connect-gate.ts'
import { isSwitchboardError } from '../../errors.ts'
import type { CallStep } from './tool-call.ts'

/** A grant lost during the call (a refresh refused: consent withdrawn), told by the provider without a connect link. */
function lostGrant (err: unknown): boolean {
  return isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED') && err.details.url === undefined
}

/**
 * The connect gate of per-user OAuth upstreams: a caller who has not connected their account there
 * is asked to, and the call waits for it (or fails with -32042, which the failure step answers).
 * After policy and rate limits, so that nobody is asked to connect for a call they may not make;
 * before the concurrency slot, so that no slot is held while a human reads a consent page.
 * A grant found gone on the way (its refresh refused) asks the caller once more, the same way,
 * and the call is sent again once they connected. Only in the chain when some upstream has per-user OAuth.
 */
export function connectStep (gate: ConnectGate): CallStep {
  return (call, next) => {
    if (!gate.guards(call.upstream)) return next(call)
    return gate.admit(call.upstream, call.ctx)
      .then(() => next(call))
      .catch(async (err: unknown) => {
        if (!lostGrant(err)) throw err
        await gate.admit(call.upstream, call.ctx)
        return await next(call)
      })
  }
}
