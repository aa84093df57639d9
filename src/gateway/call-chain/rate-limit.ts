import type { RateLimitRule } from '../../config/access-schema.ts'
import type { Metrics } from '../../observability/metrics.ts'
import type { RateLimiter } from '../../policy/rate-limiter.ts'
import { type CallStep, type CallToolResult, gatewayError, seconds } from './tool-call.ts'

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
