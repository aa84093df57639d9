import { z } from 'zod'

// The Redis every shared use of the gateway talks to (sessions, stream events, cross-replica
// messages, the token vault; rate limits and pins unless they name their own), and what sessions
// are kept in. One of three topologies: a single server (`url`), a Sentinel-managed primary
// (`sentinels`), or a Redis Cluster (`cluster`).

export const DEFAULT_REDIS_KEY_PREFIX = 'switchboard'
export const DEFAULT_REDIS_TIMEOUT_MS = 250
const REDIS_URL = /^rediss?:\/\//

const nodeSchema = z.strictObject({
  host: z.string().min(1).describe('host name or address'),
  port: z.number().int().min(1).max(65_535).describe('TCP port')
})

const TOPOLOGIES = ['url', 'sentinels', 'cluster'] as const

export const redisSchema = z.strictObject({
  url: z.string().regex(REDIS_URL, 'must be a redis:// or rediss:// URL').optional()
    .describe('one Redis server: redis://[user:password@]host:port[/db] (rediss:// for TLS); take the password from the environment. Exactly one of url, sentinels, cluster'),
  sentinels: z.array(nodeSchema).min(1).optional()
    .describe('a Sentinel-managed primary: the sentinels to ask where it is (three or more in production); needs name'),
  name: z.string().min(1).optional().describe('sentinels: the primary\'s name in the sentinels\' config (sentinel monitor <name> …)'),
  sentinelPassword: z.string().min(1).optional().describe('sentinels: the sentinels\' own password (requirepass in sentinel.conf), when they have one'),
  cluster: z.array(nodeSchema).min(1).optional()
    .describe('a Redis Cluster: some of its nodes (the rest are discovered); keys and scripts are hash-tagged so no operation crosses slots'),
  password: z.string().min(1).optional().describe('sentinels or cluster: the Redis password (with url, put it in the URL)'),
  tls: z.boolean().optional().describe('sentinels or cluster: connect with TLS (with url, use rediss://)'),
  keyPrefix: z.string().min(1).default(DEFAULT_REDIS_KEY_PREFIX).describe('every key and channel the gateway uses starts with it'),
  timeoutMs: z.number().int().min(10).max(10_000).default(DEFAULT_REDIS_TIMEOUT_MS).describe('a command slower than this counts as a Redis failure')
}).superRefine((r, ctx) => {
  if (typeof r !== 'object' || r === null) return
  const given = TOPOLOGIES.filter(key => r[key] !== undefined)
  if (given.length === 0) ctx.addIssue({ code: 'custom', path: [], message: 'needs one of url, sentinels, cluster' })
  for (const extra of given.slice(1)) {
    ctx.addIssue({ code: 'custom', path: [extra], message: `only one of url, sentinels, cluster (${given[0] as string} is set)` })
  }
  const topology = given[0]
  if (topology === 'sentinels' && r.name === undefined) ctx.addIssue({ code: 'custom', path: ['name'], message: 'required with sentinels (the primary\'s name)' })
  if (topology !== 'sentinels') {
    for (const key of ['name', 'sentinelPassword'] as const) {
      if (r[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: 'only used with sentinels' })
    }
  }
  if (topology === 'url') {
    if (r.password !== undefined) ctx.addIssue({ code: 'custom', path: ['password'], message: 'with url, put the password in the URL' })
    if (r.tls !== undefined) ctx.addIssue({ code: 'custom', path: ['tls'], message: 'with url, use rediss:// for TLS' })
  }
}, { when: () => true })

export const sessionsSchema = z.strictObject({
  store: z.enum(['memory', 'redis']).default('memory')
    .describe('memory: a session lives in the replica that opened it; redis: any replica serves any session (needs the redis block)')
})

export type RedisConfig = z.output<typeof redisSchema>
export type SessionsConfig = z.output<typeof sessionsSchema>

/**
 * Blocks that keep their own `redisUrl` (rate limits, pins) take `redis.url` when they use Redis
 * and name none, so one `redis` block serves every use. A Sentinel or Cluster block cannot be
 * written as a URL: those blocks then reach the whole `redis` block (redisConnectionFor).
 * Runs on the raw document, before validation.
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
