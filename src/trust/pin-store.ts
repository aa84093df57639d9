import { randomBytes } from 'node:crypto'
import { unwatchFile, watchFile, type Stats } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { PinningConfig } from '../config/pinning-schema.ts'
import { SwitchboardError } from '../errors.ts'
import { getOwn, parsePinRecord, setOwn, type PinData, type PinFile, type PinRecord } from './pin-book.ts'
import { RedisPinStore } from './redis-pin-store.ts'
import type { RedisBlock } from '../net/redis-client.ts'

/** Where pins live. The gateway and the `switchboard pins` CLI use the same implementations. */
export interface PinStore {
  /** For logs and the CLI: the file, the Redis key prefix, or "memory". */
  readonly where: string
  /** Every stored record of these upstreams (the file store returns every upstream it holds). */
  load: (upstreams: readonly string[]) => Promise<PinData>
  /** Stores one tool's record, leaving every other record as it is in the store. */
  save: (upstream: string, tool: string, record: PinRecord) => Promise<void>
  /** Calls `changed` (at most every intervalMs) when another process may have changed the pins. */
  watch: (changed: () => void, intervalMs: number) => void
  close: () => Promise<void>
}

/** `shared`: the `redis` block, used when the pins name no redisUrl of their own. */
export function createPinStore (config: PinningConfig, shared?: RedisBlock): PinStore {
  if (config.store === 'redis') return new RedisPinStore(config, shared)
  return config.file === undefined ? new MemoryPinStore() : new FilePinStore(config.file)
}

/** Turns a stored document into pin data, keeping only well-formed records. */
export function parsePinData (upstreams: unknown): PinData {
  const data: PinData = {}
  if (upstreams === null || typeof upstreams !== 'object') return data
  for (const [upstream, tools] of Object.entries(upstreams)) {
    if (tools === null || typeof tools !== 'object') continue
    const records: Record<string, PinRecord> = {}
    for (const [tool, value] of Object.entries(tools as Record<string, unknown>)) {
      const record = parsePinRecord(value)
      if (record !== undefined) setOwn(records, tool, record)
    }
    setOwn(data, upstream, records)
  }
  return data
}

/**
 * One readable JSON file, `{ version: 1, upstreams: { <upstream>: { <tool>: record } } }`. Each save
 * re-reads the file and replaces one record, so an approval written by the CLI in the meantime is
 * kept; the file is replaced atomically (temporary file + rename), never seen half-written.
 */
export class FilePinStore implements PinStore {
  readonly where: string
  private readonly file: string
  private queue: Promise<unknown> = Promise.resolve()
  private pending: Array<{ upstream: string, tool: string, record: PinRecord, resolve: () => void, reject: (err: unknown) => void }> = []
  private listener: ((curr: Stats, prev: Stats) => void) | undefined

  constructor (file: string) {
    this.file = file
    this.where = file
  }

  async load (): Promise<PinData> {
    let text: string
    try {
      text = await readFile(this.file, 'utf8')
    } catch (err: unknown) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw new SwitchboardError('SB_ERR_PIN_STORE', `cannot read pin file ${this.file}: ${(err as Error).message}`, { cause: err })
    }
    let doc: Partial<PinFile>
    try {
      doc = JSON.parse(text) as Partial<PinFile>
    } catch (err: unknown) {
      throw new SwitchboardError('SB_ERR_PIN_STORE', `pin file ${this.file} is not valid JSON: ${(err as Error).message}`, { cause: err })
    }
    if (doc.version !== 1) throw new SwitchboardError('SB_ERR_PIN_STORE', `pin file ${this.file}: unsupported version ${String(doc.version)}`)
    return parsePinData(doc.upstreams)
  }

  /**
   * Saves that arrive while a write is under way are written together by the next one: pinning an
   * upstream with thousands of new tools is a few writes, not one read and rewrite of the whole
   * file per tool (1,000 tools kept the gateway busy for 3-4 s).
   */
  save (upstream: string, tool: string, record: PinRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ upstream, tool, record, resolve, reject })
      if (this.pending.length === 1) this.queue = this.queue.then(async () => { await this.flush() })
    })
  }

  private async flush (): Promise<void> {
    const batch = this.pending
    this.pending = []
    try {
      const data = await this.load()
      for (const { upstream, tool, record } of batch) {
        const records = getOwn(data, upstream) ?? {}
        setOwn(records, tool, record)
        setOwn(data, upstream, records)
      }
      await this.write(data)
      for (const save of batch) save.resolve()
    } catch (err: unknown) {
      for (const save of batch) save.reject(err)
    }
  }

  private async write (data: PinData): Promise<void> {
    const doc: PinFile = { version: 1, upstreams: data }
    const temp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
    try {
      await mkdir(dirname(this.file), { recursive: true })
      await writeFile(temp, JSON.stringify(doc, null, 2) + '\n', { mode: 0o644 })
      await rename(temp, this.file)
    } catch (err: unknown) {
      await rm(temp, { force: true }).catch(() => {})
      throw new SwitchboardError('SB_ERR_PIN_STORE', `cannot write pin file ${this.file}: ${(err as Error).message}`, { cause: err })
    }
  }

  watch (changed: () => void, intervalMs: number): void {
    if (this.listener !== undefined) return
    this.listener = (curr, prev) => { if (curr.mtimeMs !== prev.mtimeMs || curr.ino !== prev.ino) changed() }
    // persistent: false — the stat timer never keeps the process alive.
    watchFile(this.file, { interval: intervalMs, persistent: false }, this.listener)
  }

  async close (): Promise<void> {
    if (this.listener !== undefined) unwatchFile(this.file, this.listener)
    this.listener = undefined
    await this.queue
  }
}

/** Pins for this process only: a config parsed from text with no pinning.file (tests, embedding). */
export class MemoryPinStore implements PinStore {
  readonly where = 'memory'
  private readonly data: PinData = {}

  async load (): Promise<PinData> {
    return structuredClone(this.data)
  }

  async save (upstream: string, tool: string, record: PinRecord): Promise<void> {
    const records = getOwn(this.data, upstream) ?? {}
    setOwn(records, tool, structuredClone(record))
    setOwn(this.data, upstream, records)
  }

  watch (): void {}

  async close (): Promise<void> {}
}
