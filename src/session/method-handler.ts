import type { CallContext } from './call-context.ts'
import type { Session } from './session.ts'

/** The request a method handler serves: one call context, over the full session. */
export type MethodContext = CallContext<Session>

/** What the dispatcher calls for each MCP method beyond the lifecycle; the gateway core provides them. */
export type MethodHandler = (params: Record<string, unknown>, ctx: MethodContext) => Promise<Record<string, unknown>>
