import type * as IORedis from 'ioredis'
import type { Redis } from 'ioredis'
import { lazyRequire } from './lazy-require.ts'
import { watchRedisAuth } from './redis-auth-watch.ts'

// ioredis costs some 20 MB of resident memory: loaded only when some part of the config uses Redis.
const ioredis = lazyRequire<typeof IORedis>('ioredis')

export const REDIS_CONNECT_TIMEOUT_MS = 2000
const REDIS_MAX_RECONNECT_DELAY_MS = 1000
const REDIS_QUIT_TIMEOUT_MS = 500
// ioredis arms a ref'd timer of this length on disconnect() and clears it only on the socket's next
// 'close'; a socket that died before (Redis down) never closes again, so the timer would hold the
// process for the default 2 s.
const REDIS_DISCONNECT_TIMEOUT_MS = 100

export interface RedisClientOptions {
  url: string
  commandTimeoutMs: number
  /** Shown by CLIENT LIST, so an operator can tell the gateway's connections apart. */
  connectionName: string
  /**
   * Queue commands while disconnected. Only for a subscriber connection, whose SUBSCRIBE must wait
   * for the first connection (ioredis re-subscribes by itself after a reconnect).
   */
  queueWhileOffline?: boolean
}

/**
 * A Redis client that fails fast instead of queueing while Redis is away, so every user of it can
 * answer from what it holds in memory, and keeps reconnecting at most a second apart.
 */
export function createRedisClient (options: RedisClientOptions): Redis {
  const client = new (ioredis().Redis)(options.url, {
    enableOfflineQueue: options.queueWhileOffline === true,
    commandTimeout: options.commandTimeoutMs,
    maxRetriesPerRequest: 1,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    disconnectTimeout: REDIS_DISCONNECT_TIMEOUT_MS,
    retryStrategy: times => Math.min(times * 100, REDIS_MAX_RECONNECT_DELAY_MS),
    connectionName: options.connectionName,
    // ioredis would send its own SUBSCRIBE on every reconnect and leave its failure (a timeout while
    // Redis stalls, a NOPERM) as an unhandled rejection, which ends the process. The subscriber's
    // owner subscribes again on 'ready' and handles the outcome (RedisSessionStore).
    autoResubscribe: false
  })
  // Without a listener ioredis reports every failed reconnect as an unhandled 'error' event; users
  // log failures of their own operations, once per outage.
  client.on('error', () => {})
  // …except a refused password, which no retry fixes: reported once per outage (redis-auth-watch.ts).
  watchRedisAuth(client, options.url, options.connectionName)
  return client
}

/** QUIT within a bound when connected, then stop reconnecting: no socket or timer outlives it. */
export async function closeRedisClient (client: Redis): Promise<void> {
  if (client.status === 'ready') {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([client.quit().catch(() => {}), new Promise(resolve => { timer = setTimeout(resolve, REDIS_QUIT_TIMEOUT_MS) })])
    clearTimeout(timer)
  }
  if (client.status !== 'end') client.disconnect()
}

/**
 * Only what is safe to log or hand on: ioredis errors can carry the command and its arguments
 * (AUTH included). A plain object, so pino prints it as-is instead of a stack that points here.
 */
export function safeRedisError (err: unknown): { type: string, message: string, code?: string } {
  if (!(err instanceof Error)) return { type: typeof err, message: String(err) }
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? { type: err.name, message: err.message, code } : { type: err.name, message: err.message }
}
