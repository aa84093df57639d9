import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import type { Metrics } from '../observability/metrics.ts'
import { RedisSessionStore } from '../session/redis-session-store.ts'
import { MemorySessionStore, type SessionStore } from '../session/session-store.ts'

/** ioredis errors can carry the command's arguments: only these fields are logged. */
function safeError (err: unknown): { type?: string, message?: string, code?: unknown } {
  if (!(err instanceof Error)) return { message: String(err) }
  return { type: err.name, message: err.message, code: (err as { code?: unknown }).code }
}

/**
 * The session store the config asks for. A Redis outage is counted per operation and logged once
 * per outage; the store never throws at its callers, so sessions known here keep working.
 */
export function createSessionStore (config: GatewayConfig, metrics: Metrics, log: Logger): SessionStore {
  if (config.sessions.store !== 'redis' || config.redis === undefined) return new MemorySessionStore()
  let failing = false
  const store = new RedisSessionStore({
    url: config.redis.url,
    keyPrefix: config.redis.keyPrefix,
    commandTimeoutMs: config.redis.timeoutMs,
    ttlMs: config.http.sessionIdleMs,
    onError: (op, err) => {
      metrics.sessionStoreErrors.inc({ op })
      if (failing) return
      failing = true
      log.warn({ op, err: safeError(err) }, 'session store unavailable: sessions known on this replica keep working, others cannot be found until it is back')
    },
    onDone: (op, seconds) => {
      metrics.sessionStoreDuration.observe({ op }, seconds)
      if (!failing) return
      failing = false
      log.info({ op }, 'session store recovered')
    }
  })
  log.info({ replica: store.replica, keyPrefix: config.redis.keyPrefix }, 'sessions shared through Redis')
  return store
}
