import { randomBytes } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import { SwitchboardError } from '../../errors.ts'
import { type RedisConnection, closeRedisClient, createRedisClient, safeRedisError } from '../../net/redis-client.ts'
import { KeyedMutex } from './keyed-mutex.ts'
import { type Keyring, grantIdPrefix } from './sealed-record.ts'
import { SealedVault, type VaultBackend } from './sealed-vault.ts'

/** A lock whose holder died frees itself after this long; a refresh takes far less. */
export const DEFAULT_LOCK_TTL_MS = 15_000
const LOCK_POLL_MS = 50
const SCAN_COUNT = 256
// list() stops after this many SCAN rounds (a bound, not an expectation: the keyspace is the gateway's).
const MAX_SCAN_ROUNDS = 1000

// Only the holder that set the lock deletes it: one whose lock expired must not free the next holder's.
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"
// A re-seal replaces the record only while it is the one read, keeping its TTL: never a newer grant.
const REPLACE = "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') return 1 else return 0 end"

/** `*?[]\` are Redis glob characters. */
function globEscape (text: string): string {
  return text.replace(/[*?[\]\\]/g, c => `\\${c}`)
}

export interface RedisVaultOptions {
  keyring: Keyring
  /** One of them: a plain URL (tests), or any topology. */
  url?: string | undefined
  connection?: RedisConnection | undefined
  keyPrefix: string
  /** A command slower than this fails (redis.timeoutMs). */
  commandTimeoutMs: number
  log?: Logger | undefined
  /** Every failed operation (`get`, `set`, `lock`, `lock_wait`…), for a metric; the operation throws too. */
  onFault?: ((op: string) => void) | undefined
  lockTtlMs?: number | undefined
  /** How long `exclusive` waits for another replica's holder; default: the lock TTL and a second. */
  lockWaitMs?: number | undefined
}

/**
 * Sealed records in Redis: grants at `<prefix>:tokens:{<upstream>:<principal>}` (a hash tag, so a
 * grant and its lock share a cluster slot), records at `<prefix>:tokens:record:<key>`. Every
 * failure throws SB_ERR_TOKEN_STORE_UNAVAILABLE within the command timeout (the client does not
 * queue while disconnected): callers answer from the tokens they hold.
 */
class RedisBackend implements VaultBackend {
  readonly #client: Redis
  readonly #base: string
  readonly #onFault: ((op: string) => void) | undefined
  readonly #lockTtlMs: number
  readonly #lockWaitMs: number
  readonly #mutex = new KeyedMutex()
  #closed = false

  constructor (options: RedisVaultOptions) {
    this.#base = `${options.keyPrefix}:tokens:`
    this.#onFault = options.onFault
    this.#lockTtlMs = options.lockTtlMs ?? DEFAULT_LOCK_TTL_MS
    this.#lockWaitMs = options.lockWaitMs ?? this.#lockTtlMs + 1000
    this.#client = createRedisClient({
      url: options.url,
      connection: options.connection,
      commandTimeoutMs: options.commandTimeoutMs,
      connectionName: `switchboard-tokens-${randomBytes(4).toString('hex')}`
    })
  }

  /** Resolves once connected, rejects after `timeoutMs` (tests, and a caller that wants its first read to find Redis). */
  async connected (timeoutMs: number): Promise<void> {
    if (this.#client.status === 'ready') return
    let timer: NodeJS.Timeout | undefined
    let onReady = (): void => {}
    try {
      await new Promise<void>((resolve, reject) => {
        onReady = resolve
        this.#client.once('ready', onReady)
        timer = setTimeout(() => { reject(new SwitchboardError('SB_ERR_TOKEN_STORE_UNAVAILABLE')) }, timeoutMs)
      })
    } finally {
      clearTimeout(timer)
      this.#client.off('ready', onReady)
    }
  }

  #key (id: string): string {
    if (id.startsWith('grant:')) return `${this.#base}{${id.slice('grant:'.length)}}`
    return `${this.#base}${id}`
  }

  #idOf (key: string): string | undefined {
    const inner = key.slice(this.#base.length)
    return inner.startsWith('{') && inner.endsWith('}') ? `grant:${inner.slice(1, -1)}` : undefined
  }

  async #run<T> (op: string, command: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new SwitchboardError('SB_ERR_TOKEN_STORE_UNAVAILABLE')
    try {
      return await command()
    } catch (err: unknown) {
      this.#onFault?.(op)
      throw new SwitchboardError('SB_ERR_TOKEN_STORE_UNAVAILABLE', undefined, { cause: safeRedisError(err) })
    }
  }

  async get (id: string): Promise<string | undefined> {
    return await this.#run('get', async () => await this.#client.get(this.#key(id))) ?? undefined
  }

  async set (id: string, sealed: string, ttlMs?: number): Promise<void> {
    const key = this.#key(id)
    await this.#run('set', async () => ttlMs === undefined ? await this.#client.set(key, sealed) : await this.#client.set(key, sealed, 'PX', Math.max(1, Math.ceil(ttlMs))))
  }

  /** SET NX: of two replicas claiming one id, only one is told it succeeded. */
  async claim (id: string, sealed: string, ttlMs: number): Promise<boolean> {
    return await this.#run('claim', async () => await this.#client.set(this.#key(id), sealed, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK'
  }

  async replace (id: string, expected: string, sealed: string): Promise<void> {
    await this.#run('replace', async () => await this.#client.eval(REPLACE, 1, this.#key(id), expected, sealed))
  }

  async delete (id: string): Promise<boolean> {
    return await this.#run('delete', async () => await this.#client.del(this.#key(id))) > 0
  }

  /** GETDEL (Redis 6.2 and later): atomic, so of two replicas taking one state only one gets it. */
  async take (id: string): Promise<string | undefined> {
    return await this.#run('take', async () => await this.#client.getdel(this.#key(id))) ?? undefined
  }

  async grants (upstream?: string): Promise<Array<[string, string]>> {
    const pattern = `${globEscape(`${this.#base}{${grantIdPrefix(upstream).slice('grant:'.length)}`)}*}`
    const keys = new Set<string>()
    // In a Cluster, SCAN sees one node's keys: every primary is scanned.
    const cluster = this.#client as unknown as { isCluster?: boolean, nodes?: (role: 'master') => Redis[] }
    const nodes = cluster.isCluster === true && cluster.nodes !== undefined ? cluster.nodes('master') : [this.#client]
    for (const node of nodes) {
      let cursor = '0'
      for (let round = 0; round < MAX_SCAN_ROUNDS; round++) {
        const [next, found] = await this.#run('list', async () => await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT))
        for (const key of found) keys.add(key)
        cursor = next
        if (cursor === '0') break
      }
    }
    const ordered = [...keys]
    if (ordered.length === 0) return []
    // One GET per key, not MGET: keys of different grants may live in different slots. A pipeline on
    // one server; separate commands (still sent together) in a Cluster, whose pipelines take one slot.
    const replies = await this.#run('list', async () => {
      if (nodes.length > 1 || cluster.isCluster === true) {
        return await Promise.all(ordered.map(async (key): Promise<[Error | null, unknown]> => await this.#client.get(key).then(v => [null, v], (err: unknown) => [err as Error, null])))
      }
      const pipeline = this.#client.pipeline()
      for (const key of ordered) pipeline.get(key)
      return await pipeline.exec()
    })
    const out: Array<[string, string]> = []
    ordered.forEach((key, i) => {
      const [err, value] = replies?.[i] ?? [null, null]
      const id = this.#idOf(key)
      // A grant deleted between SCAN and GET is simply gone; a failed GET is left out of this listing.
      if (err === null && typeof value === 'string' && id !== undefined) out.push([id, value])
    })
    return out
  }

  /** This process's holders queue in memory first, so only one of them polls Redis for the lock. */
  async exclusive<T> (id: string, fn: () => Promise<T>): Promise<T> {
    return await this.#mutex.run(id, async () => {
      const lock = `${this.#key(id)}:lock`
      const owner = randomBytes(16).toString('base64url')
      await this.#acquire(lock, owner)
      try {
        return await fn()
      } finally {
        // A failed release is counted; the lock then frees itself after its TTL.
        await this.#run('unlock', async () => await this.#client.eval(RELEASE, 1, lock, owner)).catch(() => {})
      }
    })
  }

  async #acquire (lock: string, owner: string): Promise<void> {
    const deadline = Date.now() + this.#lockWaitMs
    for (;;) {
      const set = await this.#run('lock', async () => await this.#client.set(lock, owner, 'PX', this.#lockTtlMs, 'NX'))
      if (set === 'OK') return
      if (this.#closed || Date.now() >= deadline) {
        this.#onFault?.('lock_wait')
        throw new SwitchboardError('SB_ERR_TOKEN_STORE_UNAVAILABLE', 'the token store\'s lock on this grant stayed held by another replica longer than it may')
      }
      await new Promise(resolve => setTimeout(resolve, LOCK_POLL_MS + Math.floor(Math.random() * LOCK_POLL_MS)))
    }
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await closeRedisClient(this.#client)
  }
}

/** Grants in Redis, shared by every replica with the same keys: any replica uses any grant. */
export class RedisVault extends SealedVault {
  readonly #backend: RedisBackend

  constructor (options: RedisVaultOptions) {
    const backend = new RedisBackend(options)
    super(backend, options)
    this.#backend = backend
  }

  /**
   * Resolves once its Redis connection is ready; rejects with SB_ERR_TOKEN_STORE_UNAVAILABLE after
   * `timeoutMs`. Until then commands fail at once (no offline queue).
   */
  async connected (timeoutMs = 5000): Promise<void> {
    await this.#backend.connected(timeoutMs)
  }
}
