import type * as IORedis from 'ioredis'
import type { Redis } from 'ioredis'
import { lazyRequire } from './lazy-require.ts'
import { watchRedisAuth } from './redis-auth-watch.ts'
import { markClosing, reviveOnEnd } from './redis-revival.ts'

// ioredis costs some 20 MB of resident memory: loaded only when some part of the config uses Redis.
const ioredis = lazyRequire<typeof IORedis>('ioredis')

export const REDIS_CONNECT_TIMEOUT_MS = 2000
const REDIS_MAX_RECONNECT_DELAY_MS = 1000
const REDIS_QUIT_TIMEOUT_MS = 500
// ioredis arms a ref'd timer of this length on disconnect() and clears it only on the socket's next
// 'close'; a socket that died before (Redis down) never closes again, so the timer would hold the
// process for the default 2 s.
const REDIS_DISCONNECT_TIMEOUT_MS = 100

export interface RedisNode { host: string, port: number }

/** Where Redis is: one server, a Sentinel-managed primary, or a Cluster (the `redis` config block). */
export type RedisConnection =
  | { url: string }
  | { sentinels: readonly RedisNode[], name: string, password?: string | undefined, sentinelPassword?: string | undefined, tls?: boolean | undefined }
  | { cluster: readonly RedisNode[], password?: string | undefined, tls?: boolean | undefined }

/** The shape of the validated `redis` block (exactly one topology set: the schema checks it). */
export interface RedisBlock {
  url?: string | undefined
  sentinels?: readonly RedisNode[] | undefined
  name?: string | undefined
  sentinelPassword?: string | undefined
  cluster?: readonly RedisNode[] | undefined
  password?: string | undefined
  tls?: boolean | undefined
}

/** The connection a validated `redis` block names. */
export function redisConnectionOf (block: RedisBlock): RedisConnection {
  if (block.url !== undefined) return { url: block.url }
  const { password, tls } = block
  if (block.sentinels !== undefined) {
    return { sentinels: block.sentinels, name: block.name ?? '', password, sentinelPassword: block.sentinelPassword, tls }
  }
  return { cluster: block.cluster ?? [], password, tls }
}

/**
 * For a block that may name its own URL (rate limits, pins): that URL, else the shared `redis`
 * block, whatever its topology.
 */
export function redisConnectionFor (ownUrl: string | undefined, shared: RedisBlock | undefined): RedisConnection | undefined {
  if (ownUrl !== undefined) return { url: ownUrl }
  return shared === undefined ? undefined : redisConnectionOf(shared)
}

/** Whether keys must be hash-tagged and messages sent with SPUBLISH. */
export function isClusterConnection (connection: RedisConnection): boolean {
  return 'cluster' in connection
}

/** How a connection is named in logs and outage reports: never a password. */
export function describeRedis (connection: RedisConnection): string {
  if ('url' in connection) return connection.url
  const nodes = ('sentinels' in connection ? connection.sentinels : connection.cluster).map(n => `${n.host}:${n.port}`).join(',')
  return 'sentinels' in connection ? `sentinel://${nodes}/${connection.name}` : `cluster://${nodes}`
}

export interface RedisClientOptions {
  /** A plain URL, or any topology (`connection` wins when both are given). */
  url?: string | undefined
  connection?: RedisConnection | undefined
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
  const connection = options.connection ?? { url: options.url ?? '' }
  const common = {
    commandTimeout: options.commandTimeoutMs,
    // A command in flight when its connection drops (a primary killed, a failover) is sent once
    // more on the next connection; one that finds no connection fails at once (the offline queue
    // is off), so callers answer from memory instead of waiting out the failover.
    maxRetriesPerRequest: 1,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    disconnectTimeout: REDIS_DISCONNECT_TIMEOUT_MS,
    connectionName: options.connectionName,
    // ioredis would send its own SUBSCRIBE on every reconnect and leave its failure (a timeout while
    // Redis stalls, a NOPERM) as an unhandled rejection, which ends the process. The subscriber's
    // owner subscribes again on 'ready' and handles the outcome (RedisSessionStore).
    autoResubscribe: false,
    // A demoted primary answers writes with READONLY until the client learns of the failover:
    // reconnect (Sentinel then names the new primary) and send the failed command there once.
    reconnectOnError: (err: Error) => err.message.startsWith('READONLY') ? 2 as const : false
  }
  const retryStrategy = (times: number): number => Math.min(times * 100, REDIS_MAX_RECONNECT_DELAY_MS)
  const enableOfflineQueue = options.queueWhileOffline === true
  const lib = ioredis()
  let client: Redis
  if ('url' in connection) {
    client = new lib.Redis(connection.url, { ...common, enableOfflineQueue, retryStrategy })
  } else if ('sentinels' in connection) {
    client = new lib.Redis({
      ...common,
      enableOfflineQueue,
      retryStrategy,
      sentinels: connection.sentinels.map(n => ({ host: n.host, port: n.port })),
      name: connection.name,
      ...(connection.password === undefined ? {} : { password: connection.password }),
      ...(connection.sentinelPassword === undefined ? {} : { sentinelPassword: connection.sentinelPassword }),
      ...(connection.tls === true ? { tls: {}, enableTLSForSentinelMode: true } : {}),
      sentinelRetryStrategy: retryStrategy,
      // Listen to the sentinels' +switch-master, so a failover is followed at once rather than on
      // the next failed command.
      failoverDetector: true
    })
  } else {
    // Typed as Redis for its users: a Cluster speaks the same commands, and every key a script or
    // transaction touches shares a hash tag (redis-keys.ts), so none crosses slots.
    client = new lib.Cluster(connection.cluster.map(n => ({ host: n.host, port: n.port })), {
      enableOfflineQueue,
      clusterRetryStrategy: retryStrategy,
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      // While a slot migrates, a script whose keys are half moved is answered TRYAGAIN until the last
      // one is; ioredis waits 100 ms before trying again, and two such waits already pass the default
      // 250 ms command timeout. Retried sooner, an append lands as soon as the keys are together;
      // each round is an ASK and a TRYAGAIN, so the redirections are bounded by the command timeout
      // (redis.timeoutMs), not by ioredis's 16.
      retryDelayOnTryAgain: 20,
      maxRedirections: 64,
      slotsRefreshTimeout: REDIS_CONNECT_TIMEOUT_MS,
      // Cross-replica messages go by SPUBLISH/SSUBSCRIBE: to the one node owning the channel's slot.
      shardedSubscribers: options.queueWhileOffline === true,
      // With TLS, connect by the name the node is known by, so the certificate's name matches (the
      // managed offerings announce nodes by host name behind one configuration endpoint).
      ...(connection.tls === true ? { dnsLookup: (address: string, callback: (err: Error | null, address: string) => void) => { callback(null, address) } } : {}),
      redisOptions: {
        ...common,
        ...(connection.password === undefined ? {} : { password: connection.password }),
        ...(connection.tls === true ? { tls: {} } : {})
      }
    }) as unknown as Redis
  }
  // Without a listener ioredis reports every failed reconnect as an unhandled 'error' event; users
  // log failures of their own operations, once per outage.
  client.on('error', () => {})
  // …except a refused password, which no retry fixes: reported once per outage (redis-auth-watch.ts).
  watchRedisAuth(client, describeRedis(connection), options.connectionName)
  // …and one that ends without being closed (a Sentinel failover at the wrong moment) comes back.
  reviveOnEnd(client, describeRedis(connection), options.connectionName)
  return client
}

/** QUIT within a bound when connected, then stop reconnecting: no socket or timer outlives it. */
export async function closeRedisClient (client: Redis): Promise<void> {
  markClosing(client)
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
