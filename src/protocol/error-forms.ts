// The one place an error becomes what the client sees, in any of its three forms: a JSON-RPC error,
// an HTTP refusal (status, Retry-After and the JSON-RPC body), a tools/call isError result. What each
// code is answered with is declared with the code (src/errors.ts); the texts live here.
import { type ErrorCode, type ErrorSpec, ERRORS, SwitchboardError } from '../errors.ts'
import { type JsonRpcError, type JsonRpcResponse, type RequestId, RPC, RpcError, rpcError } from './json-rpc.ts'
import { MODERN_ERROR } from './modern.ts'

/** What the failed request was: named in the texts. */
export interface ErrorContext {
  upstream?: string
  /** The JSON-RPC method (forms other than a tools/call result). */
  method?: string
  /** The tool's exposed name (the tool-result form). */
  tool?: string
  /** The call's timeout (the tool-result form of a timeout). */
  timeoutMs?: number
}

export type ToolErrorResult = Record<string, unknown>

/** The message of a failure the client learns nothing of. */
export const INTERNAL_MESSAGE = 'Internal error'
/** tools/call has said it in lower case since it was written; kept so that its bytes do not change. */
const TOOL_CALL_INTERNAL_MESSAGE = 'internal error'

function specOf (err: unknown): ErrorSpec | undefined {
  return err instanceof SwitchboardError ? ERRORS[err.code] : undefined
}

// ---- JSON-RPC form -------------------------------------------------------------------------

const errorData = (code: ErrorCode, fields: Record<string, unknown>): Record<string, unknown> => ({ 'switchboard/error': { code, ...fields } })

/** An open circuit: SB_ERR_UPSTREAM_UNAVAILABLE with `details.circuit` and `details.retryAfterMs`. */
function circuitOf (err: SwitchboardError): { circuit: unknown, retryAfterMs: number } | undefined {
  const { circuit, retryAfterMs } = err.details
  return err.code === 'SB_ERR_UPSTREAM_UNAVAILABLE' && typeof circuit === 'string' && typeof retryAfterMs === 'number' ? { circuit, retryAfterMs } : undefined
}

/** A message that could not be written for its upstream: nested too deeply, it is the client's request that is invalid. */
function unserializable (err: SwitchboardError, upstream: string, method: string): RpcError {
  const data = errorData(err.code, { upstream })
  return err.details.tooDeep === true
    ? new RpcError(RPC.INVALID_REQUEST, `Invalid Request: ${method} is nested too deeply to be forwarded to upstream "${upstream}"; nothing was sent`, data)
    : new RpcError(RPC.INTERNAL_ERROR, `Switchboard: ${method} could not be written as JSON for upstream "${upstream}"; nothing was sent`, data)
}

/** The texts of a failure on the way to an upstream (prompts/get, resources/read, ...), by code. */
function upstreamRpcError (err: SwitchboardError, upstream: string, method: string): RpcError | undefined {
  const circuit = circuitOf(err)
  if (circuit !== undefined) {
    return new RpcError(RPC.INTERNAL_ERROR, `Switchboard: upstream "${upstream}" failed repeatedly, so the gateway is not sending it requests for now (circuit open); it will try again in ${Math.ceil(circuit.retryAfterMs / 100) / 10} s`, errorData(err.code, { upstream, circuit: circuit.circuit, retryAfterMs: circuit.retryAfterMs }))
  }
  const rpc = ERRORS[err.code].rpc
  switch (err.code) {
    case 'SB_ERR_UPSTREAM_TIMEOUT': return new RpcError(rpc, `Switchboard: upstream "${upstream}" did not answer ${method} in time`, errorData(err.code, { upstream }))
    case 'SB_ERR_UPSTREAM_UNAVAILABLE': return new RpcError(rpc, `Switchboard: upstream "${upstream}" is not connected; try again shortly`, errorData(err.code, { upstream }))
    case 'SB_ERR_SESSION_LIMIT': {
      const slot = slotRefusal(err, upstream)
      if (slot !== undefined) return new RpcError(rpc, `Switchboard: ${slot.why}. ${slot.remedy}`, errorData(err.code, { upstream, limit: slot.limit, max: err.details.limit }))
      return new RpcError(rpc, isPrincipalLimit(err) ? `Switchboard: upstream "${upstream}" already serves as many users as it may (maxPrincipalConnections), each with a call in flight; try again later` : `Switchboard: upstream "${upstream}" already serves as many sessions as it may (maxSessionConnections); try again later`, errorData(err.code, { upstream }))
    }
    case 'SB_ERR_UPSTREAM_HTTP':
    case 'SB_ERR_UPSTREAM_AUTH': return new RpcError(rpc, `Switchboard: upstream "${upstream}" answered HTTP ${String(err.details.status)} to ${method}`, errorData(err.code, { upstream, status: err.details.status }))
    case 'SB_ERR_UPSTREAM_PROTOCOL': return new RpcError(rpc, `Switchboard: upstream "${upstream}" answered ${method} with something that is not a JSON-RPC answer`, errorData(err.code, { upstream }))
    case 'SB_ERR_UPSTREAM_CLOSED': return new RpcError(rpc, `Switchboard: the connection to upstream "${upstream}" was lost during ${method}`, errorData(err.code, { upstream }))
    case 'SB_ERR_MESSAGE_UNSERIALIZABLE': return unserializable(err, upstream, method)
    case 'SB_ERR_UPSTREAM_CONNECT_REQUIRED': return connectRequired(err, upstream)
    case 'SB_ERR_UPSTREAM_TOKEN': return new RpcError(rpc, `Switchboard: the gateway could not obtain your token for upstream "${upstream}": ${err.message}`, errorData(err.code, { upstream, ...retryAfterOf(err) }))
    case 'SB_ERR_TOKEN_STORE_UNAVAILABLE': return new RpcError(rpc, `Switchboard: the token store cannot be reached, so no token for upstream "${upstream}" could be read; try again shortly`, errorData(err.code, { upstream }))
    case 'SB_ERR_CONNECT_REFUSED': return new RpcError(rpc, `Switchboard: upstream "${upstream}" acts as each user, and API-key principals cannot connect an account on this gateway (http.connect.apiKeys: refuse); use a JWT from the identity provider instead`, errorData(err.code, { upstream }))
    default: return undefined
  }
}

/**
 * MCP 2025-11-25's "URL elicitation required" (-32042): `data.elicitations` holds the URL elicitation
 * a client would have been sent, so a client without URL mode (or a human reading the error) can
 * still open it; the URL is in the message too.
 */
function connectRequired (err: SwitchboardError, upstream: string): RpcError {
  const { url, elicitationId } = err.details
  if (typeof url !== 'string') return new RpcError(ERRORS[err.code].rpc, `Connect your account at upstream "${upstream}" again: the gateway no longer holds a grant for you there; call again to be given the link`, errorData(err.code, { upstream }))
  const message = `Connect your account at upstream "${upstream}" first: open ${url}`
  return new RpcError(ERRORS[err.code].rpc, message, {
    elicitations: [{ mode: 'url', elicitationId, url, message }],
    ...errorData(err.code, { upstream })
  })
}

/** The code's own message and details, for a code no request path names in its own words. */
function plainRpcError (err: SwitchboardError, spec: ErrorSpec): RpcError {
  switch (err.code) {
    case 'SB_ERR_SESSION_STORE_UNAVAILABLE':
      return new RpcError(spec.rpc, `Service Unavailable: ${err.message}; retry`, errorData(err.code, spec.retryAfterS === undefined ? {} : { retryAfterMs: spec.retryAfterS * 1000 }))
    case 'SB_ERR_LIMIT_SESSIONS':
    case 'SB_ERR_LIMIT_STREAMS':
    case 'SB_ERR_LIMIT_LISTEN_STREAMS':
    case 'SB_ERR_LIMIT_IN_FLIGHT': {
      const data = errorData(err.code, err.details)
      if (spec.retryAfterS !== undefined) data['switchboard/retryAfterMs'] = spec.retryAfterS * 1000
      return new RpcError(spec.rpc, err.message, data)
    }
    default:
      return new RpcError(spec.rpc, `Switchboard: ${err.message}`, errorData(err.code, err.details))
  }
}

/**
 * The JSON-RPC form of any error: an RpcError as it is; a SwitchboardError as its code says, in the
 * words of the request it failed (`ctx`: with an upstream, only the upstream's failures); anything
 * else, and codes not exposed, a bare -32603 whose `cause` is the error (see {@link unexpectedCause}:
 * logged where the answer is made).
 */
export function toRpcError (err: unknown, ctx: ErrorContext = {}): RpcError {
  if (err instanceof RpcError) return err
  const spec = specOf(err)
  if (spec === undefined || !spec.exposed || !(err instanceof SwitchboardError)) return internalError(err)
  // On the way to an upstream, only an upstream's failures are expected: any other code there is a bug.
  if (ctx.upstream !== undefined) return upstreamRpcError(err, ctx.upstream, ctx.method ?? 'the request') ?? internalError(err)
  return plainRpcError(err, spec)
}

/** -32603 "Internal error", nothing of `cause` on the wire. */
export function internalError (cause: unknown, message = INTERNAL_MESSAGE): RpcError {
  return new RpcError(RPC.INTERNAL_ERROR, message, undefined, { cause })
}

/** The unexpected error behind a bare -32603 made here, to be logged once where it is answered; undefined for any other error. */
export function unexpectedCause (err: unknown): unknown {
  return err instanceof RpcError && err.code === RPC.INTERNAL_ERROR && err.data === undefined ? err.cause : undefined
}

/** The error objects of answers made here from a code with an HTTP status, and that code: an upstream's error that merely looks like one is not one. */
const REFUSALS = new WeakMap<object, ErrorCode>()

/** A JSON-RPC response carrying the error's JSON-RPC form; over HTTP it goes with {@link refusalStatus}. */
export function toRpcResponse (id: RequestId | null, err: unknown, ctx: ErrorContext = {}): JsonRpcError {
  const e = toRpcError(err, ctx)
  const response = rpcError(id, e.code, e.message, e.data)
  if (err instanceof SwitchboardError && ERRORS[err.code].http !== undefined) REFUSALS.set(response.error, err.code)
  return response
}

// ---- HTTP form -----------------------------------------------------------------------------

export interface HttpForm { status: number, retryAfterS?: number, response: JsonRpcError }

/**
 * The HTTP form of any error: its code's status and Retry-After with the JSON-RPC body (`id` null:
 * refused before a request was read); 500 for a code without one and for anything unexpected.
 */
export function toHttpForm (err: unknown, id: RequestId | null = null): HttpForm {
  const spec = specOf(err)
  const response = toRpcResponse(id, err)
  const status = spec?.exposed === true ? spec.http ?? 500 : 500
  return spec?.retryAfterS === undefined || status === 500 ? { status, response } : { status, retryAfterS: spec.retryAfterS, response }
}

/**
 * The HTTP side of an answer made here from a code that has one (a copy of the response with the
 * same error object counts): its status and, where waiting helps, Retry-After in seconds; undefined
 * for any other answer, which goes in a 200.
 */
export function refusalStatus (response: JsonRpcResponse | undefined): { status: number, retryAfterS: number | undefined } | undefined {
  if (response === undefined || !('error' in response)) return undefined
  const code = REFUSALS.get(response.error)
  const spec = code === undefined ? undefined : ERRORS[code]
  return spec?.http === undefined ? undefined : { status: spec.http, retryAfterS: spec.retryAfterS }
}

/**
 * The HTTP status of a 2026-07-28 answer: a refusal's own (429 for a cap); 404 for an unknown
 * method, 400 for a missing client capability (an upstream's, passed on); 200 for the rest.
 */
export function modernHttpStatus (response: JsonRpcResponse | undefined): number {
  if (response === undefined || !('error' in response)) return 200
  const refused = refusalStatus(response)
  if (refused !== undefined) return refused.status
  if (response.error.code === RPC.METHOD_NOT_FOUND) return 404
  return response.error.code === MODERN_ERROR.MISSING_REQUIRED_CLIENT_CAPABILITY ? 400 : 200
}

// ---- tool-result form ----------------------------------------------------------------------

function toolError (text: string, code: ErrorCode, details: Record<string, unknown>, meta: Record<string, unknown> = {}): ToolErrorResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: { 'switchboard/error': { code, ...details }, ...meta } }
}

/** A refusal backed off (refusal-backoff.ts): when the caller may try again. */
function retryAfterOf (err: SwitchboardError): { retryAfterMs?: number } {
  const { retryAfterMs } = err.details
  return typeof retryAfterMs === 'number' ? { retryAfterMs } : {}
}

/** `12.4 s`; whole seconds from 10 s on. */
export function seconds (ms: number): string {
  return ms >= 10_000 ? `${Math.ceil(ms / 1000)} s` : `${(Math.ceil(ms / 100) / 10).toFixed(1)} s`
}

/** A rate limit rule's key in words. */
const KEY_WORDS: Readonly<Record<string, string>> = {
  principal: 'per caller',
  tool: 'for this tool across all callers',
  'principal+tool': 'per caller for this tool',
  upstream: 'for every tool of this upstream',
  global: 'for the whole gateway'
}

/**
 * SB_ERR_SESSION_LIMIT of a session refused its own connection by its principal's share or its own
 * process by maxRunning (src/upstream/session-slots.ts): why, and what frees a slot.
 */
function slotRefusal (err: SwitchboardError, upstream: string): { limit: string, why: string, remedy: string } | undefined {
  const max = String(err.details.limit)
  if (err.details.limitName === 'sessionConnectionsPerPrincipal') {
    return { limit: 'limits.sessionConnectionsPerPrincipal', why: `upstream "${upstream}" gives each session its own connection, and your other sessions already hold as many of them as one principal may (limits.sessionConnectionsPerPrincipal: ${max})`, remedy: 'End one of your other sessions, or make the request from one of them' }
  }
  if (err.details.limitName === 'maxRunning') {
    return { limit: 'upstreamDefaults.maxRunning', why: `upstream "${upstream}" gives each session its own process, and the gateway already runs as many processes as sessions may take (upstreamDefaults.maxRunning: ${max}, one kept for the other upstreams)`, remedy: 'Try again when another session has ended' }
  }
  return undefined
}

/** SB_ERR_SESSION_LIMIT of an upstream with a connection per principal (maxPrincipalConnections), not per session. */
function isPrincipalLimit (err: SwitchboardError): boolean {
  return err.details.limitName === 'maxPrincipalConnections'
}

/** The isError texts of tools/call, by code; undefined for a code tools/call does not answer so. */
function toolText (err: SwitchboardError, upstream: string, name: string, timeoutMs: number): ToolErrorResult | undefined {
  const d = err.details
  const circuit = circuitOf(err)
  if (circuit !== undefined) {
    const { retryAfterMs } = circuit
    const when = circuit.circuit === 'open' ? `It will try the upstream again in ${seconds(retryAfterMs)}` : `A probe call is checking whether it has recovered; retry in ${seconds(retryAfterMs)} at the latest`
    return toolError(`Switchboard: upstream "${upstream}" failed repeatedly, so the gateway stopped sending it calls for now (circuit open) and tool "${name}" did not run. ${when} (retryAfterMs ${retryAfterMs}).`, err.code, { upstream, circuit: circuit.circuit, retryAfterMs }, { 'switchboard/retryAfterMs': retryAfterMs })
  }
  switch (err.code) {
    case 'SB_ERR_UPSTREAM_TIMEOUT':
      return toolError(`Switchboard: upstream "${upstream}" did not answer tool "${name}" within ${timeoutMs} ms, so the call was cancelled. Try again later; if the tool is slow by nature, the operator can raise its timeoutMs.`, err.code, { upstream, timeoutMs })
    case 'SB_ERR_UPSTREAM_UNAVAILABLE':
      return toolError(`Switchboard: upstream "${upstream}" is not connected, so tool "${name}" cannot run now. The gateway is reconnecting; try again shortly.`, err.code, { upstream })
    case 'SB_ERR_SESSION_LIMIT': {
      const slot = slotRefusal(err, upstream)
      if (slot !== undefined) return toolError(`Switchboard: ${slot.why}, so tool "${name}" cannot run in this session now. ${slot.remedy}.`, err.code, { upstream, limit: slot.limit, max: err.details.limit })
      if (isPrincipalLimit(err)) return toolError(`Switchboard: upstream "${upstream}" gives each user their own connection and already serves as many users as it may (maxPrincipalConnections), each with a call in flight, so tool "${name}" cannot run now. Try again shortly.`, err.code, { upstream })
      return toolError(`Switchboard: upstream "${upstream}" gives each session its own connection and already serves as many sessions as it may (maxSessionConnections), so tool "${name}" cannot run now. Try again when another session has ended.`, err.code, { upstream })
    }
    case 'SB_ERR_UPSTREAM_HTTP':
    case 'SB_ERR_UPSTREAM_AUTH': {
      const status = Number(d.status)
      return toolError(`Switchboard: upstream "${upstream}" answered HTTP ${status} to tool "${name}", so this call failed; its other calls are not affected. Try again; if it persists, the upstream's operator should look at its logs.`, err.code, { upstream, status })
    }
    case 'SB_ERR_UPSTREAM_TOKEN': {
      const retry = retryAfterOf(err)
      return toolError(`Switchboard: the gateway could not obtain your token for upstream "${upstream}", so tool "${name}" did not run: ${err.message}. Other users are not affected; if it persists, connect again or ask the operator.`, err.code, { upstream, ...retry },
        retry.retryAfterMs === undefined ? {} : { 'switchboard/retryAfterMs': retry.retryAfterMs })
    }
    case 'SB_ERR_UPSTREAM_OAUTH_CLIENT':
      return toolError(`Switchboard: the gateway has no OAuth client at the authorization server of upstream "${upstream}", so tool "${name}" did not run: ${err.message}. The operator must register one.`, err.code, { upstream })
    case 'SB_ERR_TOKEN_STORE_UNAVAILABLE':
      return toolError(`Switchboard: the gateway cannot reach its token store right now, so it has no token for upstream "${upstream}" and tool "${name}" did not run. Retry shortly; other users with a token already held are not affected.`, err.code, { upstream })
    case 'SB_ERR_UPSTREAM_PROTOCOL':
      return toolError(`Switchboard: upstream "${upstream}" answered tool "${name}" with something that is not a JSON-RPC answer, so this call failed; its other calls are not affected. Try again; if it persists, the upstream's operator should look at its logs.`, err.code, { upstream })
    case 'SB_ERR_UPSTREAM_CLOSED':
      return toolError(`Switchboard: the connection to upstream "${upstream}" was lost while tool "${name}" was running; the call may or may not have taken effect. The gateway is reconnecting.`, err.code, { upstream })
    case 'SB_ERR_UPSTREAM_LIMIT':
      return toolError(`Switchboard: upstream "${upstream}" was stopped by its resource limit (${String(d.limit ?? 'a limit')}) while tool "${name}" was running, so this call failed and may or may not have taken effect. The gateway restarts it; retry, perhaps with a smaller request.`, err.code, { upstream, limit: String(d.limit ?? '') })
    case 'SB_ERR_UPSTREAM_BUSY':
      return toolError(`Switchboard: upstream "${upstream}" is already running as many calls as it may and none finished in time, so tool "${name}" did not run. Retry in a few seconds.`, err.code, { upstream })
    case 'SB_ERR_TOOL_QUARANTINED': {
      const tool = String(d.tool)
      if (d.heldBy === 'scan') return toolError(`Switchboard: the definition of tool "${name}" of upstream "${upstream}" has findings of the gateway's definition scan (for example hidden instructions or links to unknown hosts), so the tool is quarantined and did not run. An operator must review and approve it (switchboard pins approve --upstream ${upstream} --tool ${tool}).`, err.code, { upstream, tool })
      return toolError(`Switchboard: upstream "${upstream}" changed the definition of tool "${name}" since it was approved, so the tool is quarantined and did not run. An operator must review and approve the change (switchboard pins approve --upstream ${upstream} --tool ${tool}).`, err.code, { upstream, tool })
    }
    case 'SB_ERR_RATE_LIMITED': {
      const { key, limit, windowMs, retryAfterMs } = d as { key: string, limit: number, windowMs: number, retryAfterMs: number }
      return toolError(`Switchboard: rate limit reached for tool "${name}": at most ${limit} call(s) per ${seconds(windowMs)} ${KEY_WORDS[key] ?? key}. Retry in ${seconds(retryAfterMs)} (retryAfterMs ${retryAfterMs}).`,
        err.code, { key, limit, windowMs, retryAfterMs }, { 'switchboard/retryAfterMs': retryAfterMs })
    }
    // The guardrails' and approvals' codes: their message says it all, their details say the rest.
    default: return toolError(`Switchboard: ${err.message}`, err.code, { ...(upstream === '' ? {} : { upstream }), ...d })
  }
}

/**
 * The tool-result form of any error: an isError result whose text says what happened and whose
 * `_meta["switchboard/error"]` names the code (for a code tools/call answers so, exactly that answer;
 * for the others the code's own message and details). An RpcError's message as text; anything else,
 * and codes not exposed, "internal error" without internals.
 * `ctx.upstream`, `ctx.tool` (the exposed name), `ctx.timeoutMs` fill the texts.
 */
export function toToolResult (err: unknown, ctx: ErrorContext = {}): ToolErrorResult {
  if (err instanceof RpcError) return { content: [{ type: 'text', text: err.message }], isError: true }
  const spec = specOf(err)
  if (!(err instanceof SwitchboardError) || spec === undefined || !spec.exposed) return { content: [{ type: 'text', text: `Switchboard: ${TOOL_CALL_INTERNAL_MESSAGE}` }], isError: true }
  const upstream = ctx.upstream ?? (typeof err.details.upstream === 'string' ? err.details.upstream : '')
  return toolText(err, upstream, ctx.tool ?? '', ctx.timeoutMs ?? 0) ??
    toolError(`Switchboard: ${err.message}`, err.code, { ...(upstream === '' ? {} : { upstream }), ...err.details })
}

/**
 * What a failed forward of a tools/call answers, as its code says (ERRORS[code].toolCall): the isError
 * result, or the JSON-RPC error to throw. A code with no words for a call (not an upstream's failure)
 * and anything unexpected are the bare -32603 with the error as its `cause`.
 */
export function toolCallAnswer (err: unknown, ctx: ErrorContext): { result: ToolErrorResult } | { error: RpcError } {
  if (err instanceof RpcError) return { error: err }
  const spec = specOf(err)
  if (err instanceof SwitchboardError && spec?.exposed === true) {
    const upstream = ctx.upstream ?? ''
    const result = spec.toolCall === 'result' ? toolText(err, upstream, ctx.tool ?? '', ctx.timeoutMs ?? 0) : undefined
    if (result !== undefined) return { result }
    const error = spec.toolCall === 'error' ? upstreamRpcError(err, upstream, ctx.method ?? 'tools/call') : undefined
    if (error !== undefined) return { error }
  }
  return { error: internalError(err, TOOL_CALL_INTERNAL_MESSAGE) }
}
