import { type Principal, isSamePrincipal } from '../auth/principal.ts'
import { type JsonRpcRequest, RPC, RpcError, isRecord, rpcError } from '../protocol/json-rpc.ts'
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION } from '../protocol/modern.ts'
import type { Session } from '../session/session.ts'
import type { Dispatcher } from '../session/dispatcher.ts'
import type { MethodContext } from '../session/method-handler.ts'
import type { RetryHandler, RetryRouter } from '../session/retry-router.ts'
import type { SessionManager } from '../session/session-manager.ts'

/** Sends a session's task request to the replica that holds the task, and answers with its result. */
export type ForwardTask = (owner: string, method: string, params: Record<string, unknown>, ctx: MethodContext) => Promise<Record<string, unknown>>

/**
 * With several replicas, a task lives where it was created (its upstream request went out there):
 * a tasks/get, tasks/result or tasks/cancel landing elsewhere goes there over the session store's
 * bus, in the same session, and its answer (or error) comes back.
 */
export function taskForwarder (router: RetryRouter): ForwardTask {
  return async (owner, method, params, ctx) => {
    const request = { jsonrpc: '2.0' as const, id: 'task', method, params }
    const { response } = await router.forward(owner, request, ctx.session.principal, ctx.related ?? (() => {}), ctx.signal, ctx.session.id)
    if (response === undefined) throw new RpcError(RPC.INTERNAL_ERROR, `Switchboard: the replica holding the task did not answer ${method}`)
    if ('error' in response) throw new RpcError(response.error.code, response.error.message, response.error.data)
    return response.result
  }
}

/**
 * The holding replica's side: the request is served in its session (adopted from the store if
 * need be), for its own principal only; a 2026-07-28 client's, which has no session, in one made
 * for this request from its `_meta`, as on the replica it landed on.
 */
export function serveTaskHere (sessions: SessionManager, dispatcher: () => Dispatcher): RetryHandler {
  return async (request, principal, send, gone, sessionId) => {
    const found = sessionId === undefined ? undefined : sessions.resolve(sessionId)
    // A store that cannot answer leaves the task unknown here (the owner of the call asks again).
    const session = (found instanceof Promise ? await found.catch(() => undefined) : found) ?? statelessSession(sessions, request, principal)
    if (session === undefined || !isSamePrincipal(session.principal, principal)) {
      return { status: 200, response: rpcError(request.id, RPC.INVALID_PARAMS, `Unknown task: ${String(request.params?.taskId)}`) }
    }
    const cancel = (): void => { session.cancel(request.id, 'the client closed its request') }
    gone.addEventListener('abort', cancel)
    try {
      return { status: 200, response: await dispatcher().handleRequest(session, request, send) }
    } finally {
      gone.removeEventListener('abort', cancel)
      if (session.transport === 'stateless') sessions.release(session)
    }
  }
}

function statelessSession (sessions: SessionManager, request: JsonRpcRequest, principal: Principal): Session | undefined {
  const meta = request.params?._meta
  if (!isRecord(meta) || typeof meta[META_PROTOCOL_VERSION] !== 'string') return undefined
  const capabilities = meta[META_CLIENT_CAPABILITIES]
  return sessions.ephemeral({ transport: 'stateless', protocolVersion: meta[META_PROTOCOL_VERSION], clientInfo: undefined, clientCapabilities: isRecord(capabilities) ? capabilities : {}, principal, endpoint: undefined })
}
