import type { Principal } from '../../auth/principal.ts'
import type { Secret } from '../../auth/secret.ts'

/**
 * Whose grant: one principal at one upstream. `principal` is `principalKey()`: the way the principal
 * was established is part of it, so an API key named "alice" never reads the grant of JWT subject "alice".
 */
export interface GrantKey {
  readonly upstream: string
  readonly principal: string
}

/** The vault's key of a principal: `<via>:<id>` (`jwt:alice`, `api-key:ci-bot`). */
export function principalKey (principal: Principal): string {
  return `${principal.via}:${principal.id}`
}

/** What an authorization server granted, as the vault keeps it (sealed; the tokens never print). */
export interface Grant {
  readonly accessToken: Secret
  readonly refreshToken?: Secret | undefined
  /** `Bearer` unless the server said otherwise. */
  readonly tokenType: string
  /** Epoch ms the access token expires at, when the server said. */
  readonly expiresAt?: number | undefined
  readonly scope?: string | undefined
  /** Epoch ms it was obtained (or last refreshed). */
  readonly obtainedAt: number
  /** How it was obtained: the upstream's auth type (oauth, client_credentials, token_exchange). */
  readonly type: string
}

/** A grant as listings show it: never a token. */
export interface GrantSummary {
  readonly key: GrantKey
  readonly type: string
  readonly scope?: string | undefined
  readonly expiresAt?: number | undefined
  readonly obtainedAt: number
  readonly refreshable: boolean
}

/**
 * Where upstream grants live, sealed with AES-256-GCM (see sealed-record.ts): in memory, a file
 * (mode 0600), or Redis (any replica uses any grant). A record sealed with a previous key is read,
 * and sealed again with the current one on that read (sealed-vault.ts).
 */
export interface TokenVault {
  get: (key: GrantKey) => Promise<Grant | undefined>
  put: (key: GrantKey, grant: Grant) => Promise<void>
  /** True when there was one. */
  delete: (key: GrantKey) => Promise<boolean>
  list: (filter?: { upstream?: string, principal?: string }) => Promise<GrantSummary[]>
  /**
   * Runs `fn` as the only holder of `key` across every replica sharing the store (a refresh: many
   * authorization servers treat a refresh token spent twice as stolen). Others wait, bounded, and
   * then run theirs, which should read the grant again first.
   */
  exclusive: <T>(key: GrantKey, fn: () => Promise<T>) => Promise<T>
  close: () => Promise<void>
}

/**
 * Small records beside the grants, sealed too: connect states (taken once), client registrations,
 * and the last listing of per-user upstreams. Keys are namespaced by the caller (`state:…`, `client:…`).
 */
export interface VaultRecords {
  get: (key: string) => Promise<string | undefined>
  set: (key: string, value: string, ttlMs?: number) => Promise<void>
  /** Reads and deletes in one step: a second take of the same key finds nothing (single-use states). */
  take: (key: string) => Promise<string | undefined>
  /**
   * Stores `value` under `key` only when nothing lives there, for `ttlMs`: true for the one caller,
   * across every replica sharing the store, that set it (a connect link spent once).
   */
  claim: (key: string, value: string, ttlMs: number) => Promise<boolean>
  delete: (key: string) => Promise<void>
}
