import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { Logger } from 'pino'
import { SwitchboardError } from '../../errors.ts'
import { type HeldRecord, MemoryBackend } from './memory-vault.ts'
import type { Keyring } from './sealed-record.ts'
import { SealedVault } from './sealed-vault.ts'

const FILE_MODE = 0o600
const FILE_VERSION = 1

interface VaultFile {
  version: number
  records: Record<string, HeldRecord>
}

function isHeldRecord (value: unknown): value is HeldRecord {
  if (typeof value !== 'object' || value === null) return false
  const r = value as Record<string, unknown>
  return typeof r.sealed === 'string' && (r.expiresAt === undefined || (typeof r.expiresAt === 'number' && Number.isFinite(r.expiresAt)))
}

function errorCode (err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/**
 * The memory store, loaded from one JSON file at start and written back whole after every change:
 * to a temporary file created with mode 0600, then renamed over the old one, so a crash leaves the
 * old file or the new, never half of one. Writes run one at a time, each with everything up to it.
 */
class FileBackend extends MemoryBackend {
  readonly #path: string
  readonly #log: Logger | undefined
  readonly #onFault: ((op: string) => void) | undefined
  readonly #loading: Promise<void>
  #writing: Promise<void> = Promise.resolve()
  /** False when the file exists but could not be read: writing would replace grants never loaded. */
  #writable = true

  constructor (path: string, log: Logger | undefined, onFault: ((op: string) => void) | undefined) {
    super()
    this.#path = path
    this.#log = log
    this.#onFault = onFault
    this.#loading = this.#load()
  }

  protected override async ready (): Promise<void> {
    await this.#loading
  }

  protected override async changed (): Promise<void> {
    const write = this.#writing.then(async () => { await this.#write() })
    this.#writing = write.catch(() => {})
    await write
  }

  async #load (): Promise<void> {
    let text: string
    try {
      text = await readFile(this.#path, 'utf8')
    } catch (err: unknown) {
      if (errorCode(err) === 'ENOENT') return
      this.#writable = false
      this.#log?.error({ path: this.#path, code: errorCode(err) }, 'token vault: the file store cannot be read; grants are kept in memory only and not written, so the file is left as it is')
      return
    }
    await this.#warnIfOpen()
    let doc: unknown
    try {
      doc = JSON.parse(text)
    } catch {
      await this.#setAside('not JSON')
      return
    }
    const records = (doc as Partial<VaultFile> | null)?.records
    if (typeof records !== 'object' || records === null) {
      await this.#setAside('no records')
      return
    }
    const now = Date.now()
    let skipped = 0
    for (const [id, record] of Object.entries(records)) {
      if (!isHeldRecord(record)) skipped++
      else if (record.expiresAt === undefined || record.expiresAt > now) this.held.set(id, record)
    }
    if (skipped > 0) this.#log?.warn({ path: this.#path, skipped }, 'token vault: records of the file store that are not sealed records were skipped')
  }

  async #warnIfOpen (): Promise<void> {
    const { mode } = await stat(this.#path)
    if ((mode & 0o077) !== 0) this.#log?.warn({ path: this.#path, mode: (mode & 0o777).toString(8) }, 'token vault: the file store is readable by other users; it is written with mode 0600 from the next change on')
  }

  /** A file that is not the vault's is kept beside it, not overwritten by the next write. */
  async #setAside (why: string): Promise<void> {
    const aside = `${this.#path}.corrupt-${Date.now()}`
    try {
      await rename(this.#path, aside)
      this.#log?.warn({ path: this.#path, aside, why }, 'token vault: the file store is not a vault file; it was moved aside and the vault starts empty')
    } catch (err: unknown) {
      this.#writable = false
      this.#log?.error({ path: this.#path, why, code: errorCode(err) }, 'token vault: the file store is not a vault file and cannot be moved aside; grants are kept in memory only')
    }
  }

  async #write (): Promise<void> {
    if (!this.#writable) throw this.#fault('write', undefined)
    this.sweep()
    const doc: VaultFile = { version: FILE_VERSION, records: Object.fromEntries(this.held) }
    const temp = `${this.#path}.${randomBytes(6).toString('hex')}.tmp`
    try {
      await mkdir(dirname(this.#path), { recursive: true })
      const handle = await open(temp, 'wx', FILE_MODE)
      try {
        await handle.writeFile(JSON.stringify(doc))
        await handle.sync()
      } finally {
        await handle.close()
      }
      await rename(temp, this.#path)
    } catch (err: unknown) {
      await unlink(temp).catch(() => {})
      throw this.#fault('write', err)
    }
  }

  #fault (op: string, err: unknown): SwitchboardError {
    this.#onFault?.(op)
    return new SwitchboardError('SB_ERR_TOKEN_STORE_UNAVAILABLE', undefined, { cause: err })
  }
}

export interface FileVaultOptions {
  keyring: Keyring
  /** The JSON file of sealed records (its directory is made when missing). */
  path: string
  log?: Logger | undefined
  /** Every failed write, for a metric. */
  onFault?: ((op: string) => void) | undefined
}

/**
 * Grants in one file (mode 0600) that outlives restarts: one process only (two processes writing
 * the same file would each overwrite the other's grants; several replicas use Redis).
 */
export class FileVault extends SealedVault {
  constructor (options: FileVaultOptions) {
    super(new FileBackend(options.path, options.log, options.onFault), options)
  }
}
