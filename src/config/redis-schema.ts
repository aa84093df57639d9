import { z } from 'zod'

// The Redis every shared use of the gateway talks to (sessions, stream events, cross-replica
// messages; rate limits and pins unless they name their own), and what sessions are kept in.

export const DEFAULT_REDIS_KEY_PREFIX = 'switchboard'
export const DEFAULT_REDIS_TIMEOUT_MS = 250
const REDIS_URL = /^rediss?:\/\//

export const redisSchema = z.strictObject({
  url: z.string().regex(REDIS_URL, 'must be a redis:// or rediss:// URL').describe('redis://[user:password@]host:port[/db]; take the password from the environment'),
  keyPrefix: z.string().min(1).default(DEFAULT_REDIS_KEY_PREFIX).describe('every key and channel the gateway uses starts with it'),
  timeoutMs: z.number().int().min(10).max(10_000).default(DEFAULT_REDIS_TIMEOUT_MS).describe('a command slower than this counts as a Redis failure')
})

export const sessionsSchema = z.strictObject({
  store: z.enum(['memory', 'redis']).default('memory')
    .describe('memory: a session lives in the replica that opened it; redis: any replica serves any session (needs the redis block)')
})

export type RedisConfig = z.output<typeof redisSchema>
export type SessionsConfig = z.output<typeof sessionsSchema>

/**
 * Blocks that keep their own `redisUrl` (rate limits, pins) take `redis.url` when they use Redis
 * and name none, so one `redis` block serves every use. Runs on the raw document, before validation.
 */
export function inheritRedisUrl (doc: unknown): unknown {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return doc
  const raw = doc as Record<string, unknown>
  const redis = raw.redis as { url?: unknown } | undefined
  if (typeof redis?.url !== 'string') return doc
  const out = { ...raw }
  for (const key of ['rateLimits', 'pinning']) {
    const block = raw[key] as Record<string, unknown> | undefined
    if (block?.store === 'redis' && block.redisUrl === undefined) out[key] = { ...block, redisUrl: redis.url }
  }
  return out
}
