import { dirname, resolve } from 'node:path'
import type { Logger } from 'pino'
import type { RedisConfig } from '../../config/redis-schema.ts'
import type { TokensConfig } from '../../config/upstream-auth-schema.ts'
import { SwitchboardError } from '../../errors.ts'
import { FileVault } from './file-vault.ts'
import { MemoryVault } from './memory-vault.ts'
import { RedisVault } from './redis-vault.ts'
import { redisConnectionOf } from '../../net/redis-client.ts'
import { Keyring } from './sealed-record.ts'
import type { TokenVault, VaultRecords } from './token-vault.ts'

/** The file store's name beside the config file, when `tokens.file` names none. */
export const DEFAULT_TOKENS_FILE = 'switchboard-tokens.json'
// A store failing on every request would log on every request: once per this interval instead.
const FAULT_LOG_INTERVAL_MS = 60_000

export interface CreateVaultOptions {
  /** The `tokens` block; absent: store auto, a random key. */
  tokens?: TokensConfig | undefined
  /** The `redis` block, when there is one. */
  redis?: RedisConfig | undefined
  /** The config file's path: the file store lives beside it, and a relative `tokens.file` is resolved against it. */
  configPath?: string | undefined
  log: Logger
  /** Every failed store operation (`get`, `put`… as the store names them), for a metric. */
  onFault?: ((op: string) => void) | undefined
}

export interface CreatedVault {
  vault: TokenVault
  /** The same store's records; closed with the vault. */
  records: VaultRecords
  store: 'memory' | 'file' | 'redis'
}

function storeOf (options: CreateVaultOptions): CreatedVault['store'] {
  const store = options.tokens?.store ?? 'auto'
  if (store === 'redis' && options.redis === undefined) {
    throw new SwitchboardError('SB_ERR_CONFIG_INVALID', 'tokens.store is redis but the config has no redis block')
  }
  if (store !== 'auto') return store
  if (options.redis !== undefined) return 'redis'
  return options.configPath !== undefined || options.tokens?.file !== undefined ? 'file' : 'memory'
}

function fileOf (options: CreateVaultOptions): string {
  const base = options.configPath === undefined ? '.' : dirname(options.configPath)
  return resolve(base, options.tokens?.file ?? DEFAULT_TOKENS_FILE)
}

/**
 * The token vault the config asks for. `auto`: Redis when the config has a redis block (every replica
 * reads every grant), else a file beside the config (mode 0600), else memory. Without
 * `tokens.encryptionKey` a random key is made here and a warning logged once: grants then last only
 * as long as the process, and replicas cannot read each other's.
 */
export function createVault (options: CreateVaultOptions): CreatedVault {
  const { log } = options
  const store = storeOf(options)
  const keyring = new Keyring(options.tokens ?? {})
  if (keyring.ephemeral) {
    log.warn({ store }, 'tokens.encryptionKey is not set: the token vault uses a key made at start, so upstream grants are lost at restart and replicas cannot read each other\'s; set it (32 bytes, base64) from the environment')
  }
  let lastLogged = 0
  const onFault = (op: string): void => {
    options.onFault?.(op)
    const now = Date.now()
    if (now - lastLogged < FAULT_LOG_INTERVAL_MS) return
    lastLogged = now
    log.warn({ store, op }, 'token vault store unavailable: tokens already held keep working, others cannot be read or saved until it is back')
  }
  const vault = store === 'redis' && options.redis !== undefined
    ? new RedisVault({ keyring, connection: redisConnectionOf(options.redis), keyPrefix: options.redis.keyPrefix, commandTimeoutMs: options.redis.timeoutMs, log, onFault })
    : store === 'file'
      ? new FileVault({ keyring, path: fileOf(options), log, onFault })
      : new MemoryVault({ keyring, log })
  log.info({ store, kid: keyring.kid, ...(store === 'file' ? { path: fileOf(options) } : {}) }, 'token vault ready')
  return { vault, records: vault.records, store }
}
