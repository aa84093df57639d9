import type { Principal } from '../auth/principal.ts'
import type { Endpoints } from '../gateway/endpoints.ts'
import type { JsonRpcRequest } from '../protocol/json-rpc.ts'
import { LATEST_PROTOCOL_VERSION } from '../protocol/versions.ts'
import type { Dispatcher } from '../session/dispatcher.ts'
import type { SessionManager } from '../session/session-manager.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import { VERSION } from '../version.ts'
import type { AdminToolCall, AdminToolCallResult } from './console-views.ts'

/** Who the upstream (and the audit log) hears the console's calls come from. */
export const CONSOLE_CLIENT_INFO = Object.freeze({ name: 'switchboard-console', version: VERSION })

/** A console request refused before anything ran (an unknown principal or endpoint): the admin API answers it with this HTTP status. */
export class ConsoleRefusal extends Error {
  readonly statusCode: 400 | 403 | 404
  readonly error: 'unknown_principal' | 'forbidden' | 'not_found'

  constructor (statusCode: ConsoleRefusal['statusCode'], error: ConsoleRefusal['error'], message: string) {
    super(message)
    this.statusCode = statusCode
    this.error = error
  }
}

export interface ConsoleCallDeps {
  /** The principal a call acts as (console-principals.ts): undefined when there is none such. */
  principal: (id: string, roles: readonly string[] | undefined) => Principal | undefined
  /**
   * Whether the gateway knows `principal` (console-principals.ts): an unknown one is refused unless
   * `actAsUnknown()`, so the admin token cannot invent a user and act through their upstream grants.
   */
  known: (principal: Principal) => Promise<boolean>
  /** admin.console.actAsUnknown, read per call. */
  actAsUnknown: () => boolean
  sessions: Pick<SessionManager, 'ephemeral' | 'release'>
  dispatcher: Pick<Dispatcher, 'handleRequest'>
  pool: Pick<UpstreamPool, 'releaseSession'>
  endpoints: Pick<Endpoints, 'admit'>
}

let nextId = 1

/**
 * A tools/call as `call.principal` through the gateway's own path, exactly as one request of a
 * stateless client: a session for this request alone (the principal's view on the endpoint), the
 * dispatcher's in-flight cap, then the call chain (policy, rate limits, guards, approval, the
 * upstream's timeout) with its metrics, audit line and CallFeed event, both marked
 * `actor: { via: 'admin', as }` so the call never reads as the principal's own. The console declares no
 * client capabilities, so an upstream that asks the client something is refused at once.
 */
export async function consoleCall (deps: ConsoleCallDeps, call: AdminToolCall, signal?: AbortSignal): Promise<AdminToolCallResult> {
  const principal = deps.principal(call.principal, call.roles)
  if (principal === undefined) throw new ConsoleRefusal(400, 'unknown_principal', `no principal "${call.principal}" in the config's auth section`)
  if (!deps.actAsUnknown() && !await deps.known(principal)) {
    throw new ConsoleRefusal(403, 'unknown_principal', `the gateway does not know ${principal.via} principal "${principal.id}": it is no configured API key, has no open session on this replica and no stored upstream grant (admin.console.actAsUnknown: true allows it)`)
  }
  const endpoint = call.endpoint ?? undefined
  const admission = deps.endpoints.admit(endpoint, principal)
  if (!admission.ok) throw new ConsoleRefusal(admission.status, admission.status === 404 ? 'not_found' : 'forbidden', admission.message)
  const session = deps.sessions.ephemeral({ transport: 'console', protocolVersion: LATEST_PROTOCOL_VERSION, clientInfo: { ...CONSOLE_CLIENT_INFO }, clientCapabilities: {}, principal, actor: { via: 'admin', as: principal.id }, endpoint })
  if (session === undefined) throw new ConsoleRefusal(404, 'not_found', `no endpoint named "${endpoint ?? ''}"`)
  const request: JsonRpcRequest = { jsonrpc: '2.0', id: `console-${nextId++}`, method: 'tools/call', params: { name: call.tool, arguments: call.arguments ?? {} } }
  // The operator gave up (closed the page, curl interrupted): the call is cancelled like a client's.
  const cancel = (): void => { session.cancelAll('the console closed its request') }
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    if (signal?.aborted === true) cancel()
    const response = await deps.dispatcher.handleRequest(session, request)
    if (response === undefined) return { error: { code: -32800, message: 'the call was cancelled' } }
    if ('error' in response) return { error: response.error }
    return { result: response.result }
  } finally {
    signal?.removeEventListener('abort', cancel)
    deps.sessions.release(session)
    session.close()
    void deps.pool.releaseSession(session.id)
  }
}
