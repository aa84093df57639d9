import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import type { Metrics } from '../observability/metrics.ts'
import { redisConnectionOf, safeRedisError } from '../net/redis-client.ts'
import { type EventStore, MemoryEventStore } from '../session/event-store.ts'
import { RedisEventStore } from '../session/redis-event-store.ts'
import { RedisSessionStore } from '../session/redis-session-store.ts'
import { MemorySessionStore, type SessionStore } from '../session/session-store.ts'

/**
 * Where resumable stream events are kept: with shared sessions, where every replica can replay them.
 * `replica`: this replica's tag in the session store, so other replicas can tell when it is gone.
 */
export function createEventStore (config: GatewayConfig, metrics: Metrics, log: Logger, replica?: string): EventStore {
  const limits = config.http.resumability
  if (config.sessions.store !== 'redis' || config.redis === undefined) return new MemoryEventStore(limits)
  let failing = false
  return new RedisEventStore({
    connection: redisConnectionOf(config.redis),
    keyPrefix: config.redis.keyPrefix,
    ttlMs: config.http.sessionIdleMs,
    maxEventsPerStream: limits.maxEventsPerStream,
    maxStreamsPerSession: limits.maxStreamsPerSession,
    commandTimeoutMs: config.redis.timeoutMs,
    ...(replica === undefined ? {} : { replica }),
    onError: (op, err) => {
      metrics.sessionStoreErrors.inc({ op: `events_${op}` })
      if (failing) return
      failing = true
      // Live streams are unaffected; only resuming one across the outage is refused.
      log.warn({ op, err }, 'stream event store unavailable: streams go on, resuming across the outage will be refused')
    }
  })
}

/**
 * The session store the config asks for. A Redis outage is counted per operation and logged once
 * per outage; the store never throws at its callers, so sessions known here keep working.
 */
export function createSessionStore (config: GatewayConfig, metrics: Metrics, log: Logger): SessionStore {
  if (config.sessions.store !== 'redis' || config.redis === undefined) return new MemorySessionStore()
  let failing = false
  const store = new RedisSessionStore({
    connection: redisConnectionOf(config.redis),
    keyPrefix: config.redis.keyPrefix,
    commandTimeoutMs: config.redis.timeoutMs,
    ttlMs: config.http.sessionIdleMs,
    onError: (op, err) => {
      metrics.sessionStoreErrors.inc({ op })
      if (failing) return
      failing = true
      log.warn({ op, err: safeRedisError(err) }, 'session store unavailable: sessions known on this replica keep working, others cannot be found until it is back')
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
