import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Redis } from 'ioredis'
import type { PinningConfig } from '../config/pinning-schema.ts'
import { REDIS_CONNECT_TIMEOUT_MS, type RedisBlock, type RedisConnection, closeRedisClient, createRedisClient, redisConnectionFor } from '../net/redis-client.ts'
import type { UpstreamLists } from './upstream-lists.ts'

/**
 * The last listing the gateway saw of each lazy upstream, kept where the pins are (the pin file's
 * neighbour, or the pins' Redis), so a lazy upstream's tools are listed before it ever runs, on
 * this replica after a restart and on every other one.
 */
export interface ListingStore {
  readonly where: string
  load: (upstream: string) => Promise<UpstreamLists | undefined>
  save: (upstream: string, lists: UpstreamLists) => Promise<void>
  close: () => Promise<void>
}

/** Made on first use: a gateway without lazy upstreams opens no file and no Redis connection for it. */
/** `shared`: the `redis` block, used when the pins name no redisUrl of their own. */
export function createListingStore (pinning: PinningConfig, shared?: RedisBlock): ListingStore {
  let store: ListingStore | undefined
  const made = (): ListingStore => {
    if (store !== undefined) return store
    const connection = pinning.store === 'redis' ? redisConnectionFor(pinning.redisUrl, shared) : undefined
    if (connection !== undefined) store = new RedisListingStore(pinning, connection)
    else store = pinning.file === undefined ? new MemoryListingStore() : new FileListingStore(listingFileOf(pinning.file))
    return store
  }
  return {
    get where () { return made().where },
    load: async (upstream) => await made().load(upstream),
    save: async (upstream, lists) => { await made().save(upstream, lists) },
    close: async () => { await store?.close() }
  }
}

/** `gateway.pins.json` → `gateway.listings.json`, beside it. */
export function listingFileOf (pinFile: string): string {
  return pinFile.replace(/(\.pins)?\.json$/, '') + '.listings.json'
}

function parseLists (value: unknown): UpstreamLists | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const v = value as Partial<Record<keyof UpstreamLists, unknown>>
  if (!Array.isArray(v.tools)) return undefined
  const list = (x: unknown): Array<Readonly<Record<string, unknown>>> => Array.isArray(x) ? x as Array<Readonly<Record<string, unknown>>> : []
  return { tools: v.tools as UpstreamLists['tools'], prompts: list(v.prompts), resources: list(v.resources), resourceTemplates: list(v.resourceTemplates) }
}

class MemoryListingStore implements ListingStore {
  readonly where = 'memory'
  private readonly held = new Map<string, UpstreamLists>()
  async load (upstream: string): Promise<UpstreamLists | undefined> { return this.held.get(upstream) }
  async save (upstream: string, lists: UpstreamLists): Promise<void> { this.held.set(upstream, lists) }
  async close (): Promise<void> {}
}

/** `{ version: 1, upstreams: { <name>: lists } }`, replaced atomically; writes are queued one after another. */
class FileListingStore implements ListingStore {
  readonly where: string
  private queue: Promise<unknown> = Promise.resolve()

  constructor (private readonly file: string) {
    this.where = file
  }

  private async read (): Promise<Record<string, unknown>> {
    try {
      const doc = JSON.parse(await readFile(this.file, 'utf8')) as { upstreams?: unknown }
      return typeof doc.upstreams === 'object' && doc.upstreams !== null ? doc.upstreams as Record<string, unknown> : {}
    } catch (err: unknown) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw err
    }
  }

  async load (upstream: string): Promise<UpstreamLists | undefined> {
    await this.queue
    const upstreams = await this.read()
    return Object.hasOwn(upstreams, upstream) ? parseLists(upstreams[upstream]) : undefined
  }

  save (upstream: string, lists: UpstreamLists): Promise<void> {
    const write = this.queue.then(async () => {
      const upstreams = await this.read()
      upstreams[upstream] = lists
      const temp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
      try {
        await mkdir(dirname(this.file), { recursive: true })
        await writeFile(temp, JSON.stringify({ version: 1, upstreams }) + '\n', { mode: 0o644 })
        await rename(temp, this.file)
      } catch (err: unknown) {
        await rm(temp, { force: true }).catch(() => {})
        throw err
      }
    })
    this.queue = write.catch(() => {})
    return write
  }

  async close (): Promise<void> { await this.queue }
}

/** One string key per upstream, `<pins keyPrefix>:listing:<upstream>` (an upstream name holds no colon). */
class RedisListingStore implements ListingStore {
  readonly where: string
  private readonly client: Redis
  private readonly prefix: string

  constructor (pinning: PinningConfig, connection: RedisConnection) {
    this.prefix = `${pinning.keyPrefix}:listing:`
    this.where = `redis ${this.prefix}*`
    this.client = createRedisClient({ connection, commandTimeoutMs: pinning.redisTimeoutMs, connectionName: 'switchboard-listings' })
  }

  /** The client queues nothing while offline: the first command waits (bounded) for the connection. */
  private async connected (): Promise<void> {
    if (this.client.status === 'ready') return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, REDIS_CONNECT_TIMEOUT_MS)
      function done (): void { clearTimeout(timer); resolve() }
      this.client.once('ready', done)
    })
  }

  async load (upstream: string): Promise<UpstreamLists | undefined> {
    await this.connected()
    const text = await this.client.get(this.prefix + upstream)
    return text === null ? undefined : parseLists(JSON.parse(text))
  }

  async save (upstream: string, lists: UpstreamLists): Promise<void> {
    await this.connected()
    await this.client.set(this.prefix + upstream, JSON.stringify(lists))
  }

  async close (): Promise<void> { await closeRedisClient(this.client) }
}
