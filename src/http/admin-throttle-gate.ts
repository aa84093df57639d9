import type { FastifyReply } from 'fastify'
import type { AdminThrottle } from '../ops/admin-throttle.ts'

// The admin listener's answer to a wrong admin token, shared by POST /admin/login and the bearer
// hook of every admin route: one throttle per listener, so both kinds of guess count together.

export type AdminTokenVia = 'login' | 'bearer'

export interface AdminThrottleGate {
  throttle: AdminThrottle
  /** switchboard_admin_throttled_total */
  throttled?: { inc: (labels: { via: AdminTokenVia }) => void } | undefined
}

/**
 * A wrong token from `address` (the right one never comes here): while the address is held back,
 * 429 with Retry-After, not counted again, and true; otherwise the failure is counted and false is
 * returned, for the caller's 401. (Not the reply itself: a FastifyReply is a thenable.)
 */
export async function holdWrongToken (gate: AdminThrottleGate | undefined, via: AdminTokenVia, address: string, reply: FastifyReply): Promise<boolean> {
  if (gate === undefined) return false
  const waitMs = await gate.throttle.retryAfterMs(address)
  if (waitMs <= 0) {
    await gate.throttle.failed(address)
    return false
  }
  gate.throttled?.inc({ via })
  void reply.code(429).header('retry-after', String(Math.ceil(waitMs / 1000)))
    .send({ error: 'too_many_requests', message: `too many wrong admin tokens from this address; a wrong token is looked at again in ${Math.ceil(waitMs / 1000)} s (the right one is always taken)` })
  return true
}
