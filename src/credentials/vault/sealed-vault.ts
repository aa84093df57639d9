import type { Logger } from 'pino'
import type { Grant, GrantKey, GrantSummary, TokenVault, VaultRecords } from './token-vault.ts'
import { type Keyring, SealedRecordError, grantId, grantKeyOf, parseGrant, recordId, serializeGrant, summaryOf } from './sealed-record.ts'

/**
 * What a store keeps: sealed strings by record id (see sealed-record.ts for ids), nothing it could
 * read. Memory, file and Redis implement it; the sealing, re-sealing and skipping live once, in
 * {@link SealedVault}. A store that cannot be reached throws SB_ERR_TOKEN_STORE_UNAVAILABLE.
 */
export interface VaultBackend {
  get: (id: string) => Promise<string | undefined>
  set: (id: string, sealed: string, ttlMs?: number) => Promise<void>
  /** Sets the value only when the id holds none (expiring after `ttlMs`); true when this call set it. */
  claim: (id: string, sealed: string, ttlMs: number) => Promise<boolean>
  /** Replaces the value only while it still is `expected`, keeping its expiry: a re-seal never overwrites a newer write. */
  replace: (id: string, expected: string, sealed: string) => Promise<void>
  delete: (id: string) => Promise<boolean>
  /** Reads and deletes in one step. */
  take: (id: string) => Promise<string | undefined>
  /** Every grant record as [id, sealed] (of `upstream` only, when given); bounded by the store. */
  grants: (upstream?: string) => Promise<Array<[string, string]>>
  exclusive: <T>(id: string, fn: () => Promise<T>) => Promise<T>
  close: () => Promise<void>
}

export interface SealedVaultOptions {
  keyring: Keyring
  log?: Logger | undefined
}

// A record that cannot be opened warns once per id, not on every read; the set is bounded.
const MAX_WARNED = 1024

/**
 * The vault over any store: grants and records sealed with the keyring (AAD: the record id), opened
 * on read, sealed again with the current key when a previous key sealed them (rotation without
 * losing grants). A record that cannot be opened (unknown key, altered, moved, not a grant) is
 * skipped with a warning: read as absent, left in the store (a config that names its key reads it again).
 * `records` is the same store's VaultRecords; closing the vault closes both.
 */
export class SealedVault implements TokenVault {
  readonly records: VaultRecords
  readonly #backend: VaultBackend
  readonly #keyring: Keyring
  readonly #log: Logger | undefined
  readonly #warned = new Set<string>()

  constructor (backend: VaultBackend, options: SealedVaultOptions) {
    this.#backend = backend
    this.#keyring = options.keyring
    this.#log = options.log
    this.records = {
      get: async (key) => {
        const id = recordId(key)
        const sealed = await backend.get(id)
        return sealed === undefined ? undefined : await this.#open(id, sealed)
      },
      set: async (key, value, ttlMs) => {
        const id = recordId(key)
        await backend.set(id, this.#keyring.seal(value, id), ttlMs)
      },
      take: async (key) => {
        const id = recordId(key)
        const sealed = await backend.take(id)
        return sealed === undefined ? undefined : await this.#open(id, sealed, false)
      },
      claim: async (key, value, ttlMs) => {
        const id = recordId(key)
        return await backend.claim(id, this.#keyring.seal(value, id), ttlMs)
      },
      delete: async (key) => { await backend.delete(recordId(key)) }
    }
  }

  async get (key: GrantKey): Promise<Grant | undefined> {
    const id = grantId(key)
    const sealed = await this.#backend.get(id)
    return sealed === undefined ? undefined : await this.#grantOf(id, sealed)
  }

  async put (key: GrantKey, grant: Grant): Promise<void> {
    const id = grantId(key)
    await this.#backend.set(id, this.#keyring.seal(serializeGrant(grant), id))
  }

  async delete (key: GrantKey): Promise<boolean> {
    return await this.#backend.delete(grantId(key))
  }

  async list (filter: { upstream?: string, principal?: string } = {}): Promise<GrantSummary[]> {
    const found = filter.upstream !== undefined && filter.principal !== undefined
      ? await this.#one({ upstream: filter.upstream, principal: filter.principal })
      : await this.#backend.grants(filter.upstream)
    const out: GrantSummary[] = []
    for (const [id, sealed] of found) {
      const key = grantKeyOf(id)
      if (key === undefined) continue
      if (filter.upstream !== undefined && key.upstream !== filter.upstream) continue
      if (filter.principal !== undefined && key.principal !== filter.principal) continue
      const grant = await this.#grantOf(id, sealed)
      if (grant !== undefined) out.push(summaryOf(key, grant))
    }
    return out.sort((a, b) => a.key.upstream.localeCompare(b.key.upstream) || a.key.principal.localeCompare(b.key.principal))
  }

  async exclusive<T> (key: GrantKey, fn: () => Promise<T>): Promise<T> {
    return await this.#backend.exclusive(grantId(key), fn)
  }

  async close (): Promise<void> {
    await this.#backend.close()
  }

  async #one (key: GrantKey): Promise<Array<[string, string]>> {
    const id = grantId(key)
    const sealed = await this.#backend.get(id)
    return sealed === undefined ? [] : [[id, sealed]]
  }

  async #grantOf (id: string, sealed: string): Promise<Grant | undefined> {
    const text = await this.#open(id, sealed)
    if (text === undefined) return undefined
    try {
      return parseGrant(text)
    } catch {
      this.#skip(id, 'not-a-grant')
      return undefined
    }
  }

  /** The plaintext, or undefined (warned) when it cannot be opened; sealed again when `reseal` and a previous key sealed it. */
  async #open (id: string, sealed: string, reseal = true): Promise<string | undefined> {
    let opened
    try {
      opened = this.#keyring.open(sealed, id)
    } catch (err: unknown) {
      if (!(err instanceof SealedRecordError)) throw err
      this.#skip(id, err.reason)
      return undefined
    }
    if (opened.stale && reseal) {
      // Best effort: a failure leaves the old record, opened again (and re-sealed) on the next read.
      await this.#backend.replace(id, sealed, this.#keyring.seal(opened.plaintext, id)).catch(() => {})
    }
    return opened.plaintext
  }

  #skip (id: string, reason: string): void {
    if (this.#warned.has(id)) return
    if (this.#warned.size >= MAX_WARNED) this.#warned.clear()
    this.#warned.add(id)
    this.#log?.warn({ record: id, reason }, 'token vault: a record that cannot be opened is skipped (sealed with a key not configured, altered, or not a grant)')
  }
}
