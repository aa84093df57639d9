import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import { SwitchboardError } from '../errors.ts'
import { type RedisConnection, closeRedisClient, createRedisClient, isClusterConnection } from '../net/redis-client.ts'
import { type RetryMessage, type SessionMessage, type SessionRecord, type SessionStore, isRetryMessage } from './session-store.ts'

export interface RedisSessionStoreOptions {
  /** One of them: a plain URL (tests), or any topology. */
  url?: string | undefined
  connection?: RedisConnection | undefined
  keyPrefix: string
  commandTimeoutMs: number
  /** A session unused this long expires on every replica (http.sessionIdleMs). */
  ttlMs: number
  /** This replica's tag; random by default. */
  replica?: string
  /** Every failed operation, for metrics and a log line per outage; never thrown at the caller. */
  onError?: (op: string, err: unknown) => void
  /** Every operation that completed, for latency metrics. */
  onDone?: (op: string, seconds: number) => void
}

/** The keys and channels of one key prefix. */
export function sessionKeys (prefix: string): { record: (id: string) => string, bus: string, replicaBus: (replica: string) => string } {
  return {
    record: (id) => `${prefix}:session:${id}`,
    bus: `${prefix}:bus`,
    replicaBus: (replica) => `${prefix}:bus:${replica}`
  }
}

// A session in use refreshes its TTL at most this often per replica: a write per request would
// put Redis on the hot path.
const TOUCH_FRACTION = 10
const SUBSCRIBE_RETRY_MS = 500
// After a reconnection Redis may have come back empty, and the replicas holding its sessions write
// them back once they reconnect too: each within its reconnect delay (at most 1 s) and connect
// timeout (2 s) of this one. Until then a session missing from Redis is waited for, not refused.
export const RESTORE_WAIT_MS = 3000
const RESTORE_POLL_MS = 50

/**
 * Sessions as one JSON string each, with the idle TTL; replicas talk over pub/sub: one channel all
 * listen on, and one per replica for what only it can act on (a client's reply to its request).
 */
export class RedisSessionStore implements SessionStore {
  readonly shared = true
  readonly replica: string
  private readonly options: RedisSessionStoreOptions
  private readonly client: Redis
  private readonly subscriber: Redis
  private readonly keys: ReturnType<typeof sessionKeys>
  private readonly touched = new Map<string, number>()
  private readonly listeners: Array<(message: SessionMessage) => void> = []
  private readonly retryListeners: Array<(message: RetryMessage) => void> = []
  private readonly connectedListeners: Array<() => void> = []
  private closed = false
  private readonly sharded: boolean
  private everReady = false
  /** Until then, a missing record may be one a peer is about to write back (Redis came back). */
  private restoringUntil = 0

  constructor (options: RedisSessionStoreOptions) {
    this.options = options
    this.replica = options.replica ?? randomBytes(6).toString('base64url')
    this.keys = sessionKeys(options.keyPrefix)
    const common = { url: options.url, connection: options.connection, commandTimeoutMs: options.commandTimeoutMs }
    this.client = createRedisClient({ ...common, connectionName: `switchboard-sessions-${this.replica}` })
    this.subscriber = createRedisClient({ ...common, connectionName: `switchboard-bus-${this.replica}`, queueWhileOffline: true })
    this.client.on('ready', () => {
      if (this.everReady) this.restoringUntil = Date.now() + RESTORE_WAIT_MS
      this.everReady = true
      for (const listener of this.connectedListeners) listener()
    })
    // In a Cluster, classic pub/sub is broadcast to every node: sharded channels go to one.
    this.sharded = options.connection !== undefined && isClusterConnection(options.connection)
    this.subscriber.on(this.sharded ? 'smessage' : 'message', (_channel: string, text: string) => { this.received(text) })
    // Again on each (re)connection (the client does not resubscribe by itself, see redis-client.ts),
    // and until it succeeds: without the channels, this replica never hears the replies meant for it.
    this.subscriber.on('ready', () => { this.subscribe() })
    this.subscribe()
  }

  private subscribe (): void {
    if (this.closed) return
    const channels = [this.keys.bus, this.keys.replicaBus(this.replica)]
    // SSUBSCRIBE takes channels of one slot: one call each.
    const subscribed = this.sharded
      ? Promise.all(channels.map(async channel => await this.subscriber.ssubscribe(channel)))
      : this.subscriber.subscribe(...channels)
    subscribed.catch((err: unknown) => {
      if (this.closed) return
      this.options.onError?.('subscribe', err)
      // Not connected: the 'ready' event will try again. Connected but timed out: try again here.
      if (this.subscriber.status === 'ready') setTimeout(() => { this.subscribe() }, SUBSCRIBE_RETRY_MS).unref()
    })
  }

  async save (record: SessionRecord): Promise<void> {
    await this.run('save', async () => await this.client.set(this.keys.record(record.id), JSON.stringify(record), 'PX', this.options.ttlMs))
    this.touched.set(record.id, Date.now())
  }

  /**
   * Throws SB_ERR_SESSION_STORE_UNAVAILABLE when Redis cannot answer: the session may exist, so it
   * must not be reported unknown. Just after a reconnection, a missing record is waited for (see
   * RESTORE_WAIT_MS).
   */
  async load (id: string): Promise<SessionRecord | undefined> {
    for (;;) {
      let text: string | null
      try {
        text = await this.attempt('load', async () => await this.client.get(this.keys.record(id)))
      } catch (err: unknown) {
        if (this.closed) return undefined
        throw new SwitchboardError('SB_ERR_SESSION_STORE_UNAVAILABLE', undefined, { cause: err })
      }
      if (typeof text === 'string') return parseRecord(text, id)
      if (this.closed || Date.now() + RESTORE_POLL_MS > this.restoringUntil) return undefined
      await new Promise(resolve => setTimeout(resolve, RESTORE_POLL_MS))
    }
  }

  async restore (record: SessionRecord): Promise<void> {
    await this.run('restore', async () => await this.client.set(this.keys.record(record.id), JSON.stringify(record), 'PX', this.options.ttlMs, 'NX'))
  }

  onConnected (listener: () => void): void {
    this.connectedListeners.push(listener)
  }

  touch (id: string): void {
    const now = Date.now()
    if (now - (this.touched.get(id) ?? 0) < this.options.ttlMs / TOUCH_FRACTION) return
    this.touched.set(id, now)
    void this.run('touch', async () => await this.client.pexpire(this.keys.record(id), this.options.ttlMs))
  }

  remove (id: string): void {
    this.touched.delete(id)
    void this.run('remove', async () => await this.client.del(this.keys.record(id)))
    this.publish({ kind: 'removed', sessionId: id })
  }

  publish (message: SessionMessage | RetryMessage, replica?: string): void {
    const channel = replica === undefined ? this.keys.bus : this.keys.replicaBus(replica)
    const text = JSON.stringify({ from: this.replica, message })
    void this.run('publish', async () => this.sharded ? await this.client.spublish(channel, text) : await this.client.publish(channel, text))
  }

  onMessage (listener: (message: SessionMessage) => void): void {
    this.listeners.push(listener)
  }

  onRetry (listener: (message: RetryMessage) => void): void {
    this.retryListeners.push(listener)
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([closeRedisClient(this.client), closeRedisClient(this.subscriber)])
  }

  private received (text: string): void {
    let envelope: { from?: unknown, message?: SessionMessage | RetryMessage }
    try {
      envelope = JSON.parse(text) as typeof envelope
    } catch {
      return
    }
    const message = envelope.message
    if (envelope.from === this.replica || typeof message?.kind !== 'string' || this.closed) return
    if (isRetryMessage(message)) for (const listener of this.retryListeners) listener(message)
    else for (const listener of this.listeners) listener(message)
  }

  /** One Redis operation, timed; a failure is reported and answered with undefined, never thrown. */
  private async run<T> (op: string, command: () => Promise<T>): Promise<T | undefined> {
    if (this.closed) return undefined
    return await this.attempt(op, command).catch(() => undefined)
  }

  /** One Redis operation, timed; a failure is reported and thrown. */
  private async attempt<T> (op: string, command: () => Promise<T>): Promise<T> {
    const started = performance.now()
    try {
      const result = await command()
      this.options.onDone?.(op, (performance.now() - started) / 1000)
      return result
    } catch (err: unknown) {
      if (!this.closed) this.options.onError?.(op, err)
      throw err
    }
  }
}

function parseRecord (text: string, id: string): SessionRecord | undefined {
  try {
    const record = JSON.parse(text) as SessionRecord
    return record.id === id ? record : undefined
  } catch {
    return undefined
  }
}
