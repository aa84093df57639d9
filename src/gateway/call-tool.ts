import type { Logger } from 'pino'
import type { Principal } from '../auth/principal.ts'
import type { CatalogStore } from '../catalog/catalog-store.ts'
import type { RateLimitRule } from '../config/access-schema.ts'
import { CallCancelledError, isSwitchboardError } from '../errors.ts'
import type { CallOutcome, Metrics } from '../observability/metrics.ts'
import type { AccessView } from '../catalog/catalog-view.ts'
import type { ConcurrencyLimiter } from '../policy/concurrency-limiter.ts'
import type { RateLimiter } from '../policy/rate-limiter.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import { RPC, RpcError, isRecord } from '../protocol/json-rpc.ts'
import { isCircuitOpen } from '../upstream/circuit-breaker.ts'
import type { SessionRef, UpstreamPool } from '../upstream/upstream-pool.ts'
import { jsonBytes, type AuditLog } from './audit.ts'
import { forward, forwardAttempt, guarded, unserializableError, type RequestContext } from './forward.ts'
import { isRetrySafeTool } from './retry-decision.ts'
import type { TaskRelay } from './task-relay.ts'
import { withRetries } from './with-retries.ts'

/** `limiter`, `concurrency` and `audit` may be replaced while the gateway runs (a reload). */
export interface CallToolDeps {
  catalogs: CatalogStore
  pool: UpstreamPool
  metrics: Metrics
  log: Logger
  limiter: RateLimiter
  /** Upstreams with a concurrency cap. */
  concurrency: ReadonlyMap<string, ConcurrencyLimiter>
  audit?: AuditLog
  /** Tasks a `task` call created upstream, under the gateway's ids. */
  tasks?: TaskRelay
}

/** A call from a session that knows who it belongs to and what they may use. */
export interface CallContext extends RequestContext {
  /**
   * `endpoint`: the path segment the session was opened on (metrics and audit); `selection`: that
   * endpoint's part of the catalog, which the view already applies (it tells a tool outside the
   * endpoint, unknown there, from one the policy denies).
   */
  session: SessionRef & { readonly principal: Principal, readonly view: AccessView, readonly endpoint?: string | undefined, readonly selection?: Selection | undefined }
}

export type CallToolResult = Record<string, unknown>

interface Selection { selects: (kind: 'tools', name: string) => boolean }

function gatewayError (text: string, code: string, details: Record<string, unknown>, meta: Record<string, unknown> = {}): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true, _meta: { 'switchboard/error': { code, ...details }, ...meta } }
}

function seconds (ms: number): string {
  return ms >= 10_000 ? `${Math.ceil(ms / 1000)} s` : `${(Math.ceil(ms / 100) / 10).toFixed(1)} s`
}

const KEY_WORDS: Record<RateLimitRule['key'], string> = {
  principal: 'per caller',
  tool: 'for this tool across all callers',
  'principal+tool': 'per caller for this tool',
  upstream: 'for every tool of this upstream',
  global: 'for the whole gateway'
}

function rateLimited (name: string, rule: RateLimitRule, retryAfterMs: number): CallToolResult {
  return gatewayError(
    `Switchboard: rate limit reached for tool "${name}": at most ${rule.limit} call(s) per ${seconds(rule.windowMs)} ${KEY_WORDS[rule.key]}. Retry in ${seconds(retryAfterMs)} (retryAfterMs ${retryAfterMs}).`,
    'SB_ERR_RATE_LIMITED', { key: rule.key, limit: rule.limit, windowMs: rule.windowMs, retryAfterMs }, { 'switchboard/retryAfterMs': retryAfterMs })
}

function quarantined (name: string, upstream: string, tool: string): CallToolResult {
  return gatewayError(
    `Switchboard: upstream "${upstream}" changed the definition of tool "${name}" since it was approved, so the tool is quarantined and did not run. An operator must review and approve the change (switchboard pins approve --upstream ${upstream} --tool ${tool}).`,
    'SB_ERR_TOOL_QUARANTINED', { upstream, tool })
}

/**
 * tools/call as one straight line: resolve the exposed name → authorize → rate-limit → wait for a
 * slot on a capped upstream → forward with the tool's timeout → observe and audit. The upstream's
 * result comes back exactly as it was sent; failures of the path become isError results that say
 * what happened. A tool the policy hides is answered exactly like one that does not exist.
 */
export function createCallTool (deps: CallToolDeps) {
  // limiter, concurrency and audit are read per call: a reload replaces them.
  const { catalogs, pool, metrics } = deps
  return async function callTool (params: Record<string, unknown>, ctx: CallContext): Promise<CallToolResult> {
    const started = performance.now()
    const name = params.name
    if (typeof name !== 'string' || (params.arguments !== undefined && !isRecord(params.arguments))) {
      throw new RpcError(RPC.INVALID_PARAMS, 'tools/call needs a string name and an object of arguments')
    }
    const { principal, view, endpoint } = ctx.session
    const entry = catalogs.tools.resolve(name)
    let upstream = entry?.upstream ?? ''
    let outcome: CallOutcome = 'ok'
    let result: CallToolResult | undefined
    try {
      if (entry === undefined || !view.allows('tools', name)) {
        // Tool pinning: a quarantined tool the principal may see is refused with the reason, not as unknown.
        const held = entry === undefined && view.allows('tools', name) ? catalogs.tools.quarantined(name) : undefined
        if (held !== undefined) {
          upstream = held.upstream
          outcome = 'quarantined'
          result = quarantined(name, held.upstream, held.original)
          return result
        }
        if (entry === undefined || ctx.session.selection?.selects('tools', name) === false) {
          outcome = 'unknown_tool'
          upstream = ''
        } else {
          outcome = 'denied'
          metrics.policyDenials.inc({ kind: 'tools', upstream: entry.upstream, name })
          // The metric's tool label must not tell a hidden tool from a missing one either.
          upstream = ''
        }
        throw new RpcError(RPC.INVALID_PARAMS, `Unknown tool: ${name}`)
      }
      if (deps.limiter.active) {
        const decision = await deps.limiter.check({ principal, tool: name, upstream })
        if (!decision.allowed) {
          outcome = 'rate_limited'
          metrics.rateLimited.inc({ upstream, tool: name, key: decision.rule.key })
          result = rateLimited(name, decision.rule, decision.retryAfterMs)
          return result
        }
      }
      const slots = deps.concurrency.get(upstream)
      const release = slots === undefined ? undefined : await acquire(slots, upstream, ctx.signal)
      if (release === 'busy') {
        if (ctx.signal.aborted) throw new CallCancelledError()
        outcome = 'busy'
        metrics.rateLimited.inc({ upstream, tool: name, key: 'concurrency' })
        result = gatewayError(`Switchboard: upstream "${upstream}" is already running as many calls as it may and none finished in time, so tool "${name}" did not run. Retry in a few seconds.`, 'SB_ERR_UPSTREAM_BUSY', { upstream })
        return result
      }
      try {
        const forwarded = { ...params, name: entry.original }
        const retries = pool.get(upstream)?.config.retries
        // Most calls have no retries: they go straight out, without the retry loop's options and closures.
        // A call with retries passes the circuit breaker once, whatever its attempts: one call, one verdict.
        result = retries === undefined || retries.maxAttempts <= 1 || !isRetrySafeTool(entry.definition)
          ? await forward(pool, metrics, upstream, 'tools/call', forwarded, ctx, entry.timeoutMs)
          : await guarded(pool, metrics, upstream, ctx, async () => await withRetries(timeoutMs => forwardAttempt(pool, metrics, upstream, 'tools/call', forwarded, ctx, timeoutMs), {
            ...retries,
            safe: true,
            timeoutMs: entry.timeoutMs,
            signal: ctx.signal,
            onRetry: (attempt, delayMs, err) => { deps.log.info({ upstream, tool: entry.original, attempt, delayMs, err: describe(err) }, 'retrying a read-only or idempotent tool after a connection failure') },
            onRetried: (retry) => { metrics.toolRetries.inc({ upstream, tool: name, outcome: retry }) }
          }))
      } finally {
        if (release !== undefined) {
          release()
          metrics.upstreamInFlight.set({ upstream }, slots?.running ?? 0)
        }
      }
      // A task-augmented call (or, in 2026-07-28, one the server chose to run as a task) answers with
      // the task it created: the client gets it under the gateway's id.
      if ((params.task !== undefined || result.resultType === 'task') && deps.tasks !== undefined) result = deps.tasks.created(upstream, principal, ctx.session.id, result)
      if (result.isError === true) outcome = 'tool_error'
      return result
    } catch (err: unknown) {
      if (outcome !== 'ok') throw err
      const failed = failure(err, upstream, name, entry?.timeoutMs ?? 0, ctx.signal)
      outcome = failed.outcome
      if (failed.result === undefined) {
        if (failed.outcome === 'upstream_error' && !(err instanceof RpcError)) deps.log.error({ err, upstream, tool: entry?.original }, 'tools/call failed unexpectedly')
        throw failed.error
      }
      result = failed.result
      return result
    } finally {
      const durationMs = performance.now() - started
      metrics.observeCall(upstream, outcome === 'unknown_tool' || outcome === 'denied' ? '' : name, outcome, durationMs / 1000, endpoint)
      deps.audit?.({ principal, endpoint, tool: name, upstream: entry?.upstream ?? (outcome === 'quarantined' ? upstream : ''), outcome, durationMs, responseBytes: result === undefined ? 0 : jsonBytes(result), arguments: params.arguments })
    }
  }

  async function acquire (slots: ConcurrencyLimiter, upstream: string, signal: CancelSignal): Promise<(() => void) | 'busy'> {
    const pending = slots.acquire(signal)
    metrics.upstreamQueued.set({ upstream }, slots.queued)
    const release = await pending
    metrics.upstreamQueued.set({ upstream }, slots.queued)
    metrics.upstreamInFlight.set({ upstream }, slots.running)
    return release
  }
}

function describe (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

interface Failure { outcome: CallOutcome, result?: CallToolResult, error?: Error }

/** What a failed forward means for the client: an isError result, or an error to throw. */
function failure (err: unknown, upstream: string, name: string, timeoutMs: number, signal: CancelSignal): Failure {
  if (signal.aborted) return { outcome: 'cancelled', error: new CallCancelledError() }
  if (err instanceof RpcError) return { outcome: 'upstream_error', error: err }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TIMEOUT')) {
    return { outcome: 'timeout', result: gatewayError(`Switchboard: upstream "${upstream}" did not answer tool "${name}" within ${timeoutMs} ms, so the call was cancelled. Try again later; if the tool is slow by nature, the operator can raise its timeoutMs.`, err.code, { upstream, timeoutMs }) }
  }
  if (isCircuitOpen(err)) {
    const { retryAfterMs } = err.details
    const when = err.details.circuit === 'open' ? `It will try the upstream again in ${seconds(retryAfterMs)}` : `A probe call is checking whether it has recovered; retry in ${seconds(retryAfterMs)} at the latest`
    return { outcome: 'circuit_open', result: gatewayError(`Switchboard: upstream "${upstream}" failed repeatedly, so the gateway stopped sending it calls for now (circuit open) and tool "${name}" did not run. ${when} (retryAfterMs ${retryAfterMs}).`, err.code, { upstream, circuit: err.details.circuit, retryAfterMs }, { 'switchboard/retryAfterMs': retryAfterMs }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_UNAVAILABLE')) {
    return { outcome: 'unavailable', result: gatewayError(`Switchboard: upstream "${upstream}" is not connected, so tool "${name}" cannot run now. The gateway is reconnecting; try again shortly.`, err.code, { upstream }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_SESSION_LIMIT')) {
    return { outcome: 'unavailable', result: gatewayError(`Switchboard: upstream "${upstream}" gives each session its own connection and already serves as many sessions as it may (maxSessionConnections), so tool "${name}" cannot run now. Try again when another session has ended.`, err.code, { upstream }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_HTTP') || isSwitchboardError(err, 'SB_ERR_UPSTREAM_AUTH')) {
    const status = Number(err.details.status)
    return { outcome: 'upstream_error', result: gatewayError(`Switchboard: upstream "${upstream}" answered HTTP ${status} to tool "${name}", so this call failed; its other calls are not affected. Try again; if it persists, the upstream's operator should look at its logs.`, err.code, { upstream, status }) }
  }
  if (isSwitchboardError(err, 'SB_ERR_MESSAGE_UNSERIALIZABLE')) return { outcome: 'invalid', error: unserializableError(err, upstream, 'tools/call') }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED')) {
    return { outcome: 'unavailable', result: gatewayError(`Switchboard: the connection to upstream "${upstream}" was lost while tool "${name}" was running; the call may or may not have taken effect. The gateway is reconnecting.`, err.code, { upstream }) }
  }
  return { outcome: 'upstream_error', error: new RpcError(RPC.INTERNAL_ERROR, 'internal error') }
}
