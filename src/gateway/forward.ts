import { CallCancelledError, SwitchboardError, isSwitchboardError } from '../errors.ts'
import type { Metrics } from '../observability/metrics.ts'
import { spanAttributes, spanName } from '../observability/mcp-spans.ts'
import type { TraceSpan } from '../observability/tracing.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import { toRpcError } from '../protocol/error-forms.ts'
import { RpcError, isRecord } from '../protocol/json-rpc.ts'
import type { CallContext } from '../session/call-context.ts'
import { breakerVerdict, circuitOpenError, isConnectionOutage } from '../upstream/circuit-breaker.ts'
import type { ProgressParams } from '../upstream/rpc-peer.ts'
import type { ActiveCall, UpstreamConnection } from '../upstream/upstream-connection.ts'
import { renewable, renewingOnce } from './auth-retry.ts'
import type { UpstreamPool } from '../upstream/upstream-pool.ts'

/**
 * Sends one request to the upstream that serves it for this session, through the upstream's
 * circuit breaker: while the circuit is open the request fails fast (SB_ERR_UPSTREAM_UNAVAILABLE
 * with `details.circuit`) and never reaches the upstream, not even to open a session's connection.
 * `repeatable`: sending it twice does no harm (see auth-retry.ts); a tools/call says so by its tool.
 */
export function forward (pool: UpstreamPool, metrics: Metrics, upstream: string, method: string, params: Record<string, unknown>, ctx: CallContext, timeoutMs: number, repeatable = method !== 'tools/call'): Promise<Record<string, unknown>> {
  return guarded(pool, metrics, upstream, ctx, () => forwardAttempt(pool, metrics, upstream, method, params, ctx, timeoutMs, repeatable))
}

/**
 * Runs one downstream request through the upstream's circuit breaker: admitted once, and its
 * outcome recorded once, however many attempts `run` makes (retries). A failure of the connection
 * under it (lost, or not back from a restart in time) counts nothing here when that connection is
 * still down: the connection reported it to the breaker itself, once for every call it cut. A
 * probe's outcome always counts, as the probe alone decides a half-open circuit.
 */
export function guarded<T> (pool: UpstreamPool, metrics: Metrics, upstream: string, ctx: CallContext, run: () => Promise<T>): Promise<T> {
  // Plain promise chains, not async functions: this runs on every call, and each async frame is
  // a promise and a suspended frame more.
  const breaker = pool.breaker(upstream)
  if (breaker === undefined) return run()
  const admission = breaker.admit()
  if (!admission.allowed) {
    metrics.circuitRejections.inc({ upstream })
    return Promise.reject(circuitOpenError(upstream, admission))
  }
  return run().then((result) => {
    breaker.record('success', admission.probe)
    return result
  }, (err: unknown) => {
    // A client that gave up says nothing about the upstream.
    const reported = !admission.probe && isConnectionOutage(err) && !pool.isConnected(upstream, ctx.session)
    breaker.record(ctx.signal.aborted || reported ? 'neutral' : breakerVerdict(err), admission.probe)
    throw err
  })
}

/**
 * One attempt of the request itself, outside the circuit breaker (see `guarded`). The client's progress token is replaced by the peer's own and mapped back;
 * the call is registered on the connection so that what the upstream sends meanwhile (logs,
 * sampling, ...) finds this request's stream.
 */
export function forwardAttempt (pool: UpstreamPool, metrics: Metrics, upstream: string, method: string, params: Record<string, unknown>, ctx: CallContext, timeoutMs: number, repeatable = method !== 'tools/call'): Promise<Record<string, unknown>> {
  let connection: ReturnType<UpstreamPool['connectionFor']>
  try {
    connection = pool.connectionFor(upstream, ctx.session)
  } catch (err: unknown) {
    return Promise.reject(err)
  }
  if (connection === undefined) return Promise.reject(new SwitchboardError('SB_ERR_UPSTREAM_UNAVAILABLE', `upstream ${upstream} is not configured`))
  // A principal's (or session's) connection acts with the token of their latest request (a token exchange trades it; it is never sent).
  if (ctx.token !== undefined) connection.presented(ctx.token)
  const meta = isRecord(params._meta) ? params._meta : undefined
  const token = meta?.progressToken
  let onProgress: ((p: ProgressParams) => void) | undefined
  let out = params
  if (token !== undefined) {
    const { progressToken: _token, ...rest } = meta as Record<string, unknown>
    out = { ...params }
    if (Object.keys(rest).length === 0) delete out._meta
    else out._meta = rest
    const related = ctx.related
    if (related !== undefined) {
      onProgress = (p) => {
        related({ jsonrpc: '2.0', method: 'notifications/progress', params: { ...p, progressToken: token } })
        metrics.notifications.inc({ method: 'notifications/progress' })
      }
    }
  }
  const call = { sessionId: ctx.session.id, related: ctx.related, client: ctx.session }
  // Only a provider that can renew a credential pays for the 401 rule's closure.
  const provider = renewable(pool.credentialsFor(upstream))
  if (provider === undefined) return sendOnce(connection, upstream, method, out, ctx, call, onProgress, timeoutMs)
  let serving = connection
  return renewingOnce(provider, connection, repeatable, ctx.signal, timeoutMs, (left) => {
    // A caller's connection refused at its connect closed on it: the repeat goes on the one that serves them now.
    if (serving.ended) {
      serving = pool.connectionFor(upstream, ctx.session) ?? serving
      if (ctx.token !== undefined) serving.presented(ctx.token)
    }
    return sendOnce(serving, upstream, method, out, ctx, call, onProgress, left)
  })
}

function sendOnce (connection: UpstreamConnection, upstream: string, method: string, params: Record<string, unknown>, ctx: CallContext, call: ActiveCall, onProgress: ((p: ProgressParams) => void) | undefined, timeoutMs: number): Promise<Record<string, unknown>> {
  // A tool's result is relayed as the upstream wrote it; a step that must look inside parses it then (raw-result.ts).
  const options = { timeoutMs, signal: ctx.signal, onProgress, raw: method === 'tools/call' }
  if (ctx.trace === undefined) return connection.request(method, params, options, call)
  return traced(ctx.trace, upstream, method, params, async (traced) => await connection.request(method, traced, options, call))
}

/**
 * An upstream request as a CLIENT span under the downstream one; its trace context goes to the
 * upstream in `_meta` (and, by the HTTP transport, in the `traceparent` header).
 */
async function traced (parent: TraceSpan, upstream: string, method: string, params: Record<string, unknown>, send: (params: Record<string, unknown>) => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> {
  parent.set('switchboard.upstream', upstream)
  const span = parent.child(spanName(method, params), { ...spanAttributes(method, params), 'switchboard.upstream': upstream })
  const meta = isRecord(params._meta) ? params._meta : {}
  try {
    const result = await send({ ...params, _meta: { ...meta, ...span.carrier } })
    span.end({ outcome: result.isError === true ? 'tool_error' : 'ok' })
    return result
  } catch (err: unknown) {
    span.end({ outcome: 'error', error: isSwitchboardError(err) ? err.code : err instanceof RpcError ? String(err.code) : err instanceof Error ? err.name : 'error' })
    throw err
  }
}

/**
 * A request that could not be written to the upstream: it never left, and the connection is fine.
 * Nested too deeply, it is the client's request that is invalid (-32600); anything else is ours (-32603).
 */
export function unserializableError (err: SwitchboardError, upstream: string, method: string): RpcError {
  return toRpcError(err, { upstream, method })
}

/**
 * For requests other than tools/call: path failures become JSON-RPC errors that say what happened
 * (src/protocol/error-forms.ts). An unexpected one becomes a bare -32603 whose `cause` the dispatcher logs.
 */
export function forwardFailure (err: unknown, upstream: string, method: string, signal: CancelSignal): Error {
  if (signal.aborted) return new CallCancelledError()
  return toRpcError(err, { upstream, method })
}
