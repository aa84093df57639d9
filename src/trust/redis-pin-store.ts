import type { Redis } from 'ioredis'
import { REDIS_CONNECT_TIMEOUT_MS, type RedisBlock, closeRedisClient, createRedisClient, redisConnectionFor } from '../net/redis-client.ts'
import type { PinningConfig } from '../config/pinning-schema.ts'
import { SwitchboardError } from '../errors.ts'
import { parsePinRecord, setOwn, type PinData, type PinRecord } from './pin-book.ts'

/** ioredis errors can carry the command and its arguments (AUTH included): keep the message only. */
function storeError (what: string, err: unknown): SwitchboardError {
  return new SwitchboardError('SB_ERR_PIN_STORE', `${what}: ${err instanceof Error ? err.message : String(err)}`)
}

/**
 * One hash per upstream, `<keyPrefix>:<upstream>`, field = tool name, value = the record as JSON.
 * HSET replaces one field atomically, so gateways and the CLI never overwrite each other's records.
 * Changes made elsewhere are found by re-reading the hashes every reloadIntervalMs.
 */
export class RedisPinStore {
  readonly where: string
  private readonly client: Redis
  private readonly prefix: string
  private timer: NodeJS.Timeout | undefined
  private closed = false

  constructor (config: PinningConfig, shared?: RedisBlock) {
    this.prefix = config.keyPrefix
    this.where = `redis ${config.keyPrefix}:*`
    this.client = createRedisClient({ connection: redisConnectionFor(config.redisUrl, shared) ?? { url: '' }, commandTimeoutMs: config.redisTimeoutMs, connectionName: 'switchboard-pins' })
  }

  private key (upstream: string): string {
    return `${this.prefix}:${upstream}`
  }

  /** The first operation waits (bounded) for the first connection instead of failing at once. */
  private async connected (): Promise<void> {
    if (this.client.status === 'ready') return
    if (this.client.status === 'end' || this.closed) throw storeError('pin store closed', 'closed')
    let timer: NodeJS.Timeout | undefined
    let onReady: (() => void) | undefined
    try {
      await new Promise<void>((resolve, reject) => {
        onReady = resolve
        this.client.once('ready', onReady)
        timer = setTimeout(() => { reject(storeError(`Redis pin store (${this.prefix}) not reachable`, `no connection within ${REDIS_CONNECT_TIMEOUT_MS} ms`)) }, REDIS_CONNECT_TIMEOUT_MS)
      })
    } finally {
      clearTimeout(timer)
      if (onReady !== undefined) this.client.off('ready', onReady)
    }
  }

  async load (upstreams: readonly string[]): Promise<PinData> {
    await this.connected()
    let hashes: Array<Record<string, string>>
    try {
      hashes = await Promise.all(upstreams.map(u => this.client.hgetall(this.key(u))))
    } catch (err: unknown) {
      throw storeError('cannot read pins from Redis', err)
    }
    const data: PinData = {}
    upstreams.forEach((upstream, i) => {
      const records: Record<string, PinRecord> = {}
      for (const [tool, json] of Object.entries(hashes[i] ?? {})) {
        let value: unknown
        try { value = JSON.parse(json) } catch { continue }
        const record = parsePinRecord(value)
        if (record !== undefined) setOwn(records, tool, record)
      }
      if (Object.keys(records).length > 0) setOwn(data, upstream, records)
    })
    return data
  }

  async save (upstream: string, tool: string, record: PinRecord): Promise<void> {
    await this.connected()
    try {
      await this.client.hset(this.key(upstream), tool, JSON.stringify(record))
    } catch (err: unknown) {
      throw storeError('cannot write a pin to Redis', err)
    }
  }

  watch (changed: () => void, intervalMs: number): void {
    if (this.timer !== undefined || this.closed) return
    this.timer = setInterval(changed, intervalMs)
    this.timer.unref()
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.timer)
    await closeRedisClient(this.client)
  }
}
