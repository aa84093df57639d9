import type { Logger } from 'pino'
import { KeyedMutex } from './keyed-mutex.ts'
import { type Keyring, grantIdPrefix } from './sealed-record.ts'
import { SealedVault, type VaultBackend } from './sealed-vault.ts'

/** A sealed record as held in memory (and written to the file store): expiry in epoch ms, when it has one. */
export interface HeldRecord {
  readonly sealed: string
  readonly expiresAt?: number | undefined
}

// Expired records nobody reads again (connect states never completed) are swept at most this often.
const SWEEP_EVERY_MS = 60_000

/**
 * Sealed records in a Map, in this process only. `exclusive` is a per-id mutex: with one process
 * there is no other replica to exclude. The file store extends it with `ready` and `changed`.
 */
export class MemoryBackend implements VaultBackend {
  protected readonly held = new Map<string, HeldRecord>()
  readonly #mutex = new KeyedMutex()
  #sweptAt = Date.now()

  /** Resolves once the records are loaded (at once here). */
  protected async ready (): Promise<void> {}
  /** Called after every change (nothing to do here). */
  protected async changed (): Promise<void> {}

  protected live (id: string, now = Date.now()): HeldRecord | undefined {
    const record = this.held.get(id)
    if (record?.expiresAt !== undefined && record.expiresAt <= now) {
      this.held.delete(id)
      return undefined
    }
    return record
  }

  protected sweep (now = Date.now()): void {
    for (const [id, record] of this.held) if (record.expiresAt !== undefined && record.expiresAt <= now) this.held.delete(id)
    this.#sweptAt = now
  }

  async get (id: string): Promise<string | undefined> {
    await this.ready()
    return this.live(id)?.sealed
  }

  async set (id: string, sealed: string, ttlMs?: number): Promise<void> {
    await this.ready()
    const now = Date.now()
    if (now - this.#sweptAt > SWEEP_EVERY_MS) this.sweep(now)
    this.held.set(id, ttlMs === undefined ? { sealed } : { sealed, expiresAt: now + ttlMs })
    await this.changed()
  }

  async claim (id: string, sealed: string, ttlMs: number): Promise<boolean> {
    await this.ready()
    // Checked and set before any await: of two claims in this process only one finds the id free.
    if (this.live(id) !== undefined) return false
    this.held.set(id, { sealed, expiresAt: Date.now() + ttlMs })
    await this.changed()
    return true
  }

  async replace (id: string, expected: string, sealed: string): Promise<void> {
    await this.ready()
    const record = this.live(id)
    if (record?.sealed !== expected) return
    this.held.set(id, { ...record, sealed })
    await this.changed()
  }

  async delete (id: string): Promise<boolean> {
    await this.ready()
    const had = this.live(id) !== undefined
    if (!this.held.delete(id)) return false
    await this.changed()
    return had
  }

  async take (id: string): Promise<string | undefined> {
    await this.ready()
    const record = this.live(id)
    if (record === undefined) return undefined
    // Deleted before any await: a second take in this process finds nothing.
    this.held.delete(id)
    await this.changed()
    return record.sealed
  }

  async grants (upstream?: string): Promise<Array<[string, string]>> {
    await this.ready()
    const prefix = grantIdPrefix(upstream)
    const now = Date.now()
    const out: Array<[string, string]> = []
    for (const id of [...this.held.keys()]) {
      if (!id.startsWith(prefix)) continue
      const record = this.live(id, now)
      if (record !== undefined) out.push([id, record.sealed])
    }
    return out
  }

  async exclusive<T> (id: string, fn: () => Promise<T>): Promise<T> {
    return await this.#mutex.run(id, fn)
  }

  async close (): Promise<void> {}
}

export interface MemoryVaultOptions {
  keyring: Keyring
  log?: Logger | undefined
}

/** Grants in this process's memory: gone at restart, unseen by other replicas. */
export class MemoryVault extends SealedVault {
  constructor (options: MemoryVaultOptions) {
    super(new MemoryBackend(), options)
  }
}
