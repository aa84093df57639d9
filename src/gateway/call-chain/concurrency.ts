import { CallCancelledError, SwitchboardError } from '../../errors.ts'
import type { Metrics } from '../../observability/metrics.ts'
import type { ConcurrencyLimiter, Release } from '../../policy/concurrency-limiter.ts'
import { toToolResult } from '../../protocol/error-forms.ts'
import type { CallStep } from './tool-call.ts'

type SlotMetrics = Pick<Metrics, 'upstreamQueued' | 'upstreamInFlight' | 'rateLimited'>

/**
 * A slot on an upstream with a concurrency cap, held until the upstream answered. A call that finds
 * no slot in time does not run (busy); one whose client cancels while it waits is cancelled.
 * `slots` is read per call: a reload replaces an upstream's limiter in it.
 */
export function concurrencyStep (slots: ReadonlyMap<string, ConcurrencyLimiter>, metrics: SlotMetrics): CallStep {
  return (call, next) => {
    const limiter = slots.get(call.upstream)
    return limiter === undefined ? next(call) : held(limiter, call, next)
  }

  async function held (limiter: ConcurrencyLimiter, call: Parameters<CallStep>[0], next: Parameters<CallStep>[1]): ReturnType<CallStep> {
    const { upstream, tool } = call
    const release = await acquire(limiter, upstream, call.ctx.signal)
    if (release === 'busy') {
      if (call.ctx.signal.aborted) throw new CallCancelledError()
      call.outcome = 'busy'
      metrics.rateLimited.inc({ upstream, tool, key: 'concurrency' })
      return toToolResult(new SwitchboardError('SB_ERR_UPSTREAM_BUSY'), { upstream, tool })
    }
    try {
      return await next(call)
    } finally {
      release()
      metrics.upstreamInFlight.set({ upstream }, limiter.running)
    }
  }

  async function acquire (limiter: ConcurrencyLimiter, upstream: string, signal: Parameters<ConcurrencyLimiter['acquire']>[0]): Promise<Release | 'busy'> {
    const pending = limiter.acquire(signal)
    metrics.upstreamQueued.set({ upstream }, limiter.queued)
    const release = await pending
    metrics.upstreamQueued.set({ upstream }, limiter.queued)
    metrics.upstreamInFlight.set({ upstream }, limiter.running)
    return release
  }
}
