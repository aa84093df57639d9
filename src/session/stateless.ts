import type { IncomingToken } from '../auth/incoming-token.ts'
import type { Principal } from '../auth/principal.ts'
import {
  type JsonRpcRequest, type JsonRpcResponse, type RequestId, MCP_ERROR, RPC, isRecord, rpcError, rpcResult
} from '../protocol/json-rpc.ts'
import {
  META_SERVER_INFO, MODERN_ERROR, MODERN_PROTOCOL_VERSIONS, REMOVED_METHODS, TASKS_EXTENSION, type ModernClaim
} from '../protocol/modern.ts'
import type { PrincipalLimits } from '../limits/principal-limits.ts'
import { modernHttpStatus } from '../protocol/error-forms.ts'
import { rawWith } from '../protocol/raw-result.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { TraceCarrier } from '../observability/tracing.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'
import type { Dispatcher, RelatedSender } from './dispatcher.ts'
import { BridgedCall, InputBridge } from './input-bridge.ts'
import type { RetryAnswer, RetryRouter } from './retry-router.ts'
import { retryMismatch } from './retry-binding.ts'
import { isLogLevel } from './log-levels.ts'
import type { SessionManager } from './session-manager.ts'

export interface StatelessDeps {
  dispatcher: Dispatcher
  sessions: SessionManager
  pool: UpstreamPool
  serverInfo: { name: string, version: string, title?: string }
  /** The calls that wait for a client's answers (input_required). */
  bridge: InputBridge
  /** The arguments of a tool (by its exposed name) that its schema mirrors into `Mcp-Param-*` headers. */
  mirroredParams: (tool: string) => Readonly<Record<string, string>>
  /** Takes a retry whose call waits on another replica there; undefined with one replica. */
  router?: RetryRouter
  /** The open subscriptions/listen streams, each ended gracefully at shutdown. */
  listens: Set<{ shutdown: () => void }>
  /** The caps per principal: listen streams are counted against them (requests are, by the dispatcher). */
  limits?: PrincipalLimits
  metrics: Pick<Metrics, 'inputRequired' | 'inputRequiredPending' | 'listensActive'>
}

/** What a stateless request learns from server/discover; the same lists as a session's, minus what the era removed. */
const MODERN_CAPABILITIES = {
  tools: { listChanged: true },
  prompts: { listChanged: true },
  resources: { listChanged: true },
  completions: {}
}

/** The tasks extension's methods, for clients that declare it; and the 2025-11-25 ones it has not. */
const TASK_METHODS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel'])
const NOT_IN_TASKS_EXTENSION = new Set(['tasks/result', 'tasks/list'])

const declaresTasks = (claim: ModernClaim): boolean => isRecord(claim.clientCapabilities.extensions) && claim.clientCapabilities.extensions[TASKS_EXTENSION] !== undefined

/** What server/discover offers: the tasks extension too when an upstream of the era offers it (its tasks are relayed). */
function capabilitiesFor (deps: StatelessDeps): Record<string, unknown> {
  for (const connection of deps.pool.sharedConnections()) {
    const extensions = connection.capabilities.extensions
    if (connection.era === 'modern' && isRecord(extensions) && extensions[TASKS_EXTENSION] !== undefined) return { ...MODERN_CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } }
  }
  return MODERN_CAPABILITIES
}

/** Results a modern client may cache, which therefore carry how long and for whom. */
const CACHEABLE = new Set(['server/discover', 'tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read'])

/** A 2026-07-28 answer and the HTTP status it goes with (the era answers a removed method with 404): a forwarded retry's too. */
export type StatelessAnswer = RetryAnswer

/** The requests whose upstream may ask the client something: answered `input_required` then. */
const INPUT_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read'])

const invalidState = (id: RequestId, why: string): StatelessAnswer =>
  ({ status: 200, response: rpcError(id, RPC.INVALID_PARAMS, `Invalid params: ${why}`, { reason: 'invalid_request_state' }) })

/**
 * One request of a 2026-07-28 client, served without a session: what it may see is the principal's
 * view on the endpoint, computed for this request. The answer gets what the era requires of every
 * result: `resultType`, and for lists and reads `ttlMs` and `cacheScope` ("private": what a list
 * holds depends on the caller's policy). The gateway's identity goes in `_meta`, a missing resource
 * is `-32602`. When a 2025-11-25 upstream asks the client something during a call (sampling,
 * elicitation, roots), the answer is `input_required` with the questions; the client's retry, with
 * `inputResponses` and the `requestState` it was given, resumes the same upstream call.
 * `send` carries the call's notifications (progress, logs) to the POST being answered.
 */
export async function serveStateless (deps: StatelessDeps, request: JsonRpcRequest, claim: ModernClaim, principal: Principal, endpoint: string | undefined, send: RelatedSender, gone: CancelSignal, trace?: TraceCarrier, token?: IncomingToken): Promise<StatelessAnswer> {
  if (REMOVED_METHODS.has(request.method) || NOT_IN_TASKS_EXTENSION.has(request.method)) {
    return { status: 404, response: rpcError(request.id, RPC.METHOD_NOT_FOUND, `Method not found: ${request.method} (removed in 2026-07-28)`) }
  }
  if (request.method === 'server/discover') {
    return { status: 200, response: rpcResult(request.id, stamped('server/discover', { supportedVersions: [...MODERN_PROTOCOL_VERSIONS], capabilities: capabilitiesFor(deps) }, deps.serverInfo)) }
  }
  if (TASK_METHODS.has(request.method) && !declaresTasks(claim)) {
    return { status: 400, response: rpcError(request.id, MODERN_ERROR.MISSING_REQUIRED_CLIENT_CAPABILITY, `${request.method} needs the ${TASKS_EXTENSION} extension in the client's capabilities`, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } }) }
  }
  const params = request.params ?? {}
  // A requestState of this gateway's bridge resumes the call waiting here (or on another replica);
  // any other belongs to a 2026-07-28 upstream, which checks it: the request goes to it as it is.
  if (InputBridge.ownerOf(params.requestState) !== undefined) return await resume(deps, request, params, principal, send, gone)
  // Only a request that can answer input_required may carry the upstream's questions; for the rest
  // the client declares nothing, and an upstream that asks is refused at once.
  const capabilities = INPUT_METHODS.has(request.method) ? claim.clientCapabilities : {}
  const session = deps.sessions.ephemeral({ transport: 'stateless', protocolVersion: claim.version, clientInfo: claim.clientInfo, clientCapabilities: capabilities, principal, endpoint })
  if (session === undefined) return { status: 404, response: rpcError(request.id, RPC.TRANSPORT_ERROR, 'Endpoint not found') }
  if (isLogLevel(claim.logLevel)) session.logLevel = claim.logLevel
  const call = new BridgedCall(session, request, relay => deps.dispatcher.handleRequest(session, request, relay, trace, token))
  call.send = send
  return await proceed(deps, call, request.id, gone)
}

/** A retry: the call its requestState names goes on with the client's answers, here or on the replica where it waits. */
async function resume (deps: StatelessDeps, retry: JsonRpcRequest, params: Record<string, unknown>, principal: Principal, send: RelatedSender, gone: CancelSignal): Promise<StatelessAnswer> {
  const owner = InputBridge.ownerOf(params.requestState)
  if (deps.router !== undefined && owner !== undefined && owner !== deps.bridge.replica) return await deps.router.forward(owner, retry, principal, send, gone)
  return await resumeHere(deps, retry, principal, send, gone)
}

/**
 * A retry of a call that waits in this process (it landed here, or another replica forwarded it
 * with its principal). Only its own principal, repeating its own request (method, name, arguments),
 * with answers to what was asked, may go on with the call; any other retry is refused and leaves the
 * call waiting for the right one.
 */
export async function resumeHere (deps: StatelessDeps, retry: JsonRpcRequest, principal: Principal, send: RelatedSender, gone: CancelSignal): Promise<StatelessAnswer> {
  const params = retry.params ?? {}
  const responses = params.inputResponses
  const taken = deps.bridge.take(params.requestState, (call) => {
    return retryMismatch(call.binding, principal, retry) ??
      (isRecord(responses) && call.answers(responses) ? undefined : 'its inputResponses answer questions that were not asked')
  })
  deps.metrics.inputRequiredPending.set(deps.bridge.size)
  if (!(taken instanceof BridgedCall)) {
    deps.metrics.inputRequired.inc({ outcome: 'refused' })
    if (taken === 'invalid') return invalidState(retry.id, 'requestState was not issued by this gateway (altered, or from another one)')
    if (taken === 'unknown') return invalidState(retry.id, 'requestState has expired or was already used')
    return invalidState(retry.id, `the retry does not repeat its request: ${taken.refused}`)
  }
  taken.answer(responses as Record<string, unknown>)
  deps.metrics.inputRequired.inc({ outcome: 'resumed' })
  taken.send = send
  return await proceed(deps, taken, retry.id, gone)
}

/**
 * Waits for the call's answer, or parks it and tells the client what the upstream asks. A client
 * that closes its request meanwhile cancels the call: in 2026-07-28 that is what cancelling is.
 */
async function proceed (deps: StatelessDeps, call: BridgedCall, id: RequestId, gone: CancelSignal): Promise<StatelessAnswer> {
  const cancel = (): void => { call.session.cancelAll('the client closed its request') }
  if (gone.aborted) cancel()
  gone.addEventListener('abort', cancel)
  try {
    return await wait(deps, call, id)
  } finally {
    gone.removeEventListener('abort', cancel)
  }
}

async function wait (deps: StatelessDeps, call: BridgedCall, id: RequestId): Promise<StatelessAnswer> {
  for (;;) {
    const step = await call.next()
    if (step !== 'input') {
      finish(deps, call)
      const response = step.done === undefined ? undefined : modernized(call.request.method, { ...step.done, id }, deps.serverInfo)
      return { status: modernHttpStatus(response), response }
    }
    if (!deps.bridge.full) break
    // At the bound: the upstream's questions fail now, as a client's error would, and the call goes on.
    deps.metrics.inputRequired.inc({ outcome: 'full' })
    for (const [key, asked] of [...call.asked]) {
      call.asked.delete(key)
      call.session.resolveClientRequest({ jsonrpc: '2.0', id: asked.id, error: { code: RPC.INTERNAL_ERROR, message: 'Switchboard: too many calls are waiting for their clients to answer' } })
    }
  }
  call.send = undefined
  const requestState = deps.bridge.park(call, (expired) => {
    deps.metrics.inputRequired.inc({ outcome: 'expired' })
    deps.metrics.inputRequiredPending.set(deps.bridge.size)
    giveUp(deps, expired)
  })
  deps.metrics.inputRequired.inc({ outcome: 'asked' })
  deps.metrics.inputRequiredPending.set(deps.bridge.size)
  const inputRequests: Record<string, unknown> = {}
  for (const [key, asked] of call.asked) inputRequests[key] = asked.params === undefined ? { method: asked.method } : { method: asked.method, params: asked.params }
  return { status: 200, response: rpcResult(id, { resultType: 'input_required', inputRequests, requestState, _meta: { [META_SERVER_INFO]: deps.serverInfo } }) }
}

/** The call is over: its session is forgotten, and a connection opened for it alone is closed. */
function finish (deps: StatelessDeps, call: BridgedCall): void {
  deps.sessions.release(call.session)
  void deps.pool.releaseSession(call.session.id)
}

/** No retry came in time (or a wrong one did): the upstream's questions fail and its call is cancelled. */
function giveUp (deps: StatelessDeps, call: BridgedCall): void {
  call.session.close()
  finish(deps, call)
}

/** Shutdown: the calls waiting for their clients are given up. */
export function closeStateless (deps: StatelessDeps): void {
  deps.router?.close()
  deps.bridge.close(call => { giveUp(deps, call) })
  deps.metrics.inputRequiredPending.set(0)
  for (const listen of [...deps.listens]) listen.shutdown()
}

function modernized (method: string, response: JsonRpcResponse, serverInfo: StatelessDeps['serverInfo']): JsonRpcResponse {
  if ('error' in response) {
    const { code, message, data } = response.error
    // 2026-07-28: a resource that does not exist is invalid params, with its URI.
    return code === MCP_ERROR.RESOURCE_NOT_FOUND ? rpcError(response.id ?? null, RPC.INVALID_PARAMS, message, data) : response
  }
  return rpcResult(response.id, stamped(method, response.result, serverInfo))
}

/**
 * A copy of `result` with the fields the era requires; an upstream's own `resultType`, `ttlMs` and
 * `cacheScope` are kept. A copy, because a shared catalog page is frozen (and its own JSON, kept
 * with it, is not copied: the copy is serialized afresh).
 */
function stamped (method: string, result: Record<string, unknown>, serverInfo: StatelessDeps['serverInfo']): Record<string, unknown> {
  const meta = isRecord(result._meta) ? result._meta : {}
  const changes: Record<string, unknown> = { resultType: result.resultType ?? 'complete', _meta: { ...meta, [META_SERVER_INFO]: serverInfo } }
  if (CACHEABLE.has(method) && changes.resultType === 'complete') {
    changes.ttlMs = result.ttlMs ?? 0
    changes.cacheScope = result.cacheScope ?? 'private'
  }
  // A result relayed as it arrived keeps its other members' bytes (raw-result.ts).
  return rawWith(result, changes) ?? { ...result, ...changes }
}
