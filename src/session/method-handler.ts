import type { TraceSpan } from '../observability/tracing.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import type { RelatedSender, Session } from './session.ts'

/** The request a method handler serves: whose it is, how it is cancelled, where its related messages go. */
export interface MethodContext {
  session: Session
  signal: CancelSignal
  related?: RelatedSender
  /** The request's span, when tracing is on: upstream requests it causes hang from it. */
  trace?: TraceSpan
}

/** What the dispatcher calls for each MCP method beyond the lifecycle; the gateway core provides them. */
export type MethodHandler = (params: Record<string, unknown>, ctx: MethodContext) => Promise<Record<string, unknown>>
