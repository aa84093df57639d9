import type { Logger } from 'pino'
import type { Metrics } from '../../observability/metrics.ts'
import type { UpstreamPool } from '../../upstream/upstream-pool.ts'
import { forward, forwardAttempt, guarded } from '../forward.ts'
import { isRetrySafeTool } from '../retry-decision.ts'
import { withRetries } from '../with-retries.ts'
import type { Next } from './tool-call.ts'

function describe (err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/**
 * The end of the chain: the call goes to its upstream under the upstream's own name, with the
 * tool's timeout, through the upstream's circuit breaker. A read-only or idempotent tool of an
 * upstream with retries is tried again after a connection failure; the breaker gives one verdict
 * per call, whatever its attempts.
 */
export function forwardStep (pool: UpstreamPool, metrics: Metrics, log: Logger): Next {
  return (call) => {
    const { upstream, ctx, entry } = call
    // The resolve step runs first in every chain; a chain built without it is a programming error.
    if (entry === undefined) return Promise.reject(new Error('forwardStep: the call was not resolved'))
    const forwarded = { ...call.params, name: entry.original }
    // The pool's config is read per call: a reload changes an upstream's retries with its connection.
    const retries = pool.get(upstream)?.config.retries
    const safe = isRetrySafeTool(entry.definition)
    // Most calls have no retries: they go straight out, without the retry loop's options and closures.
    if (retries === undefined || retries.maxAttempts <= 1 || !safe) {
      return forward(pool, metrics, upstream, 'tools/call', forwarded, ctx, entry.timeoutMs, safe)
    }
    return guarded(pool, metrics, upstream, ctx, async () => await withRetries(timeoutMs => forwardAttempt(pool, metrics, upstream, 'tools/call', forwarded, ctx, timeoutMs, true), {
      ...retries,
      safe: true,
      timeoutMs: entry.timeoutMs,
      signal: ctx.signal,
      onRetry: (attempt, delayMs, err) => { log.info({ upstream, tool: entry.original, attempt, delayMs, err: describe(err) }, 'retrying a read-only or idempotent tool after a connection failure') },
      onRetried: (retry) => { metrics.toolRetries.inc({ upstream, tool: call.tool, outcome: retry }) }
    }))
  }
}
