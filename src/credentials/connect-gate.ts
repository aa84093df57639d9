import { isSwitchboardError } from '../errors.ts'
import type { CallContext } from '../session/call-context.ts'

/**
 * Stands before every request forwarded to an upstream whose auth acts for each user: a caller who
 * has not connected their account there is asked to (a URL elicitation for a client that can show
 * one, `input_required` for a 2026-07-28 client, else the -32042 error naming the URL), and the
 * request goes on once the connect completed, or fails with SB_ERR_UPSTREAM_CONNECT_REQUIRED.
 */
export interface ConnectGate {
  /** Cheap and synchronous: whether requests to `upstream` pass this gate at all. */
  guards: (upstream: string) => boolean
  /** Resolves when `ctx`'s principal may send to `upstream`; rejects with SB_ERR_UPSTREAM_CONNECT_REQUIRED. */
  admit: (upstream: string, ctx: CallContext) => Promise<void>
}

/**
 * `send` behind `gate`. The grant the gate saw can be lost on the way: its refresh is refused
 * (invalid_grant, a revocation), the provider forgets it and fails with
 * SB_ERR_UPSTREAM_CONNECT_REQUIRED, which names no connect URL (a provider has none to give). The
 * gate is then asked once more: it answers with the URL (-32042, a URL elicitation, input_required),
 * and once the user connected, `send` runs again: its request never left, for want of a token.
 */
export async function throughGate<T> (gate: ConnectGate, upstream: string, ctx: CallContext, send: () => Promise<T>): Promise<T> {
  await gate.admit(upstream, ctx)
  try {
    return await send()
  } catch (err: unknown) {
    if (!isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED') || err.details.url !== undefined) throw err
    await gate.admit(upstream, ctx)
    return await send()
  }
}
