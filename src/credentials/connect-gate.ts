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
