import type { RateLimitRule } from '../../config/access-schema.ts'
import type { Metrics } from '../../observability/metrics.ts'
import type { RateLimiter } from '../../policy/rate-limiter.ts'
import { SwitchboardError } from '../../errors.ts'
import { toToolResult } from '../../protocol/error-forms.ts'
import type { CallStep, CallToolResult } from './tool-call.ts'

function rateLimited (name: string, rule: RateLimitRule, retryAfterMs: number): CallToolResult {
  return toToolResult(new SwitchboardError('SB_ERR_RATE_LIMITED', undefined, { details: { key: rule.key, limit: rule.limit, windowMs: rule.windowMs, retryAfterMs } }), { tool: name })
}

/**
 * The rate-limit rules: a call over a limit does not run and is answered with when to retry. Only
 * in the chain when there are rules (`limiter.active`); a reload builds a new chain with the new limiter.
 */
export function rateLimitStep (limiter: RateLimiter, metrics: Pick<Metrics, 'rateLimited'>): CallStep {
  return async (call, next) => {
    const { tool, upstream } = call
    const decision = await limiter.check({ principal: call.ctx.principal, tool, upstream })
    if (decision.allowed) return await next(call)
    call.outcome = 'rate_limited'
    metrics.rateLimited.inc({ upstream, tool, key: decision.rule.key })
    return rateLimited(tool, decision.rule, decision.retryAfterMs)
  }
}
