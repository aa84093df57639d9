import type { ConnectGate } from '../../credentials/connect-gate.ts'
import type { CallStep } from './tool-call.ts'

/**
 * The connect gate of per-user OAuth upstreams: a caller who has not connected their account there
 * is asked to, and the call waits for it (or fails with -32042, which the failure step answers).
 * After policy and rate limits, so that nobody is asked to connect for a call they may not make;
 * before the concurrency slot, so that no slot is held while a human reads a consent page.
 * Only in the chain when some upstream has per-user OAuth.
 */
export function connectStep (gate: ConnectGate): CallStep {
  return (call, next) => gate.guards(call.upstream)
    ? gate.admit(call.upstream, call.ctx).then(() => next(call))
    : next(call)
}
