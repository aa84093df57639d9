import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { Secret } from '../../auth/secret.ts'
import type { Grant, GrantKey, GrantSummary } from './token-vault.ts'

// Every record the vault keeps is sealed with AES-256-GCM: `sb1.<kid>.<iv>.<tag>.<ciphertext>`
// (base64url). The key id names the key that sealed it, so `tokens.previousKeys` can still open
// records after a rotation; the additional authenticated data is the record's id (its key in the
// store), so a record copied under another principal's or upstream's key fails to open.

const FORMAT = 'sb1'
const KEY_BYTES = 32
const IV_BYTES = 12
const TAG_BYTES = 16
const KID_HEX = 8
const ALGORITHM = 'aes-256-gcm'

/** Why a record could not be opened; the vault skips it with a warning and never shows its content. */
export class SealedRecordError extends Error {
  readonly reason: 'malformed' | 'unknown-key' | 'unauthentic'

  constructor (reason: SealedRecordError['reason'], message: string) {
    super(message)
    this.name = 'SealedRecordError'
    this.reason = reason
  }
}

export interface KeyringConfig {
  /** 32 bytes, base64. Absent: a random key made at start (see {@link Keyring.ephemeral}). */
  readonly encryptionKey?: string | undefined
  readonly previousKeys?: readonly string[] | undefined
}

export interface Opened {
  readonly plaintext: string
  /** Sealed with a previous key: the caller seals it again with the current one. */
  readonly stale: boolean
}

/** The first 8 hex digits of the key's SHA-256: names a key without revealing it. */
export function keyIdOf (key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, KID_HEX)
}

function decodeKey (base64: string, what: string): Buffer {
  const key = Buffer.from(base64, 'base64')
  if (key.length !== KEY_BYTES) throw new Error(`${what} must be ${KEY_BYTES} bytes, base64`)
  return key
}

/** Seals with the current key, opens with the current one or any previous key. */
export class Keyring {
  readonly kid: string
  /**
   * True when no key was configured and this one was made at start: records do not outlive the
   * process and replicas cannot read each other's. The caller logs it once as a warning.
   */
  readonly ephemeral: boolean
  readonly #current: Buffer
  readonly #keys = new Map<string, Buffer>()

  constructor (config: KeyringConfig = {}) {
    this.ephemeral = config.encryptionKey === undefined
    this.#current = config.encryptionKey === undefined ? randomBytes(KEY_BYTES) : decodeKey(config.encryptionKey, 'tokens.encryptionKey')
    this.kid = keyIdOf(this.#current)
    this.#keys.set(this.kid, this.#current)
    for (const [i, previous] of (config.previousKeys ?? []).entries()) {
      const key = decodeKey(previous, `tokens.previousKeys[${i}]`)
      const kid = keyIdOf(key)
      if (!this.#keys.has(kid)) this.#keys.set(kid, key)
    }
  }

  seal (plaintext: string, aad: string): string {
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv(ALGORITHM, this.#current, iv, { authTagLength: TAG_BYTES })
    cipher.setAAD(Buffer.from(aad, 'utf8'))
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return [FORMAT, this.kid, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), data.toString('base64url')].join('.')
  }

  /** Throws {@link SealedRecordError} when the record is not one, its key is unknown, or it was altered or moved. */
  open (sealed: string, aad: string): Opened {
    const parts = sealed.split('.')
    const [format, kid, iv64, tag64, data64] = parts
    if (parts.length !== 5 || format !== FORMAT || kid === undefined || iv64 === undefined || tag64 === undefined || data64 === undefined) {
      throw new SealedRecordError('malformed', 'not a sealed record')
    }
    const key = this.#keys.get(kid)
    if (key === undefined) throw new SealedRecordError('unknown-key', `sealed with key ${kid}, which is neither tokens.encryptionKey nor one of tokens.previousKeys`)
    const iv = Buffer.from(iv64, 'base64url')
    const tag = Buffer.from(tag64, 'base64url')
    if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new SealedRecordError('malformed', 'not a sealed record')
    try {
      const decipher = createDecipheriv(ALGORITHM, key, iv, { authTagLength: TAG_BYTES })
      decipher.setAAD(Buffer.from(aad, 'utf8'))
      decipher.setAuthTag(tag)
      const plaintext = Buffer.concat([decipher.update(Buffer.from(data64, 'base64url')), decipher.final()]).toString('utf8')
      return { plaintext, stale: kid !== this.kid }
    } catch {
      throw new SealedRecordError('unauthentic', 'the record was altered, or belongs under another key')
    }
  }
}

// Record ids: what the AAD binds, and what each store maps to its own keys. `%`, `{`, `}` and `:`
// are escaped so that no upstream or principal can forge another's id or break a Redis hash tag.
const GRANT_ID = /^grant:([^:]*):(.*)$/

function escapePart (part: string): string {
  return part.replace(/[%{}:]/g, c => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
}

/** `grant:<upstream>:<principal>`, each escaped. */
export function grantId (key: GrantKey): string {
  return `grant:${escapePart(key.upstream)}:${escapePart(key.principal)}`
}

/** What every grant id (of `upstream`, when given) starts with. */
export function grantIdPrefix (upstream?: string): string {
  return upstream === undefined ? 'grant:' : `grant:${escapePart(upstream)}:`
}

/** The key of a grant id; undefined for any other id. */
export function grantKeyOf (id: string): GrantKey | undefined {
  const match = GRANT_ID.exec(id)
  if (match === null) return undefined
  try {
    return { upstream: decodeURIComponent(match[1] ?? ''), principal: decodeURIComponent(match[2] ?? '') }
  } catch {
    return undefined
  }
}

/** `record:<key>`, escaped. */
export function recordId (key: string): string {
  return `record:${escapePart(key)}`
}

/** A grant as the sealed plaintext holds it: the only place its tokens are written out. */
interface GrantJson {
  accessToken: string
  refreshToken?: string
  tokenType: string
  expiresAt?: number
  scope?: string
  obtainedAt: number
  type: string
}

export function serializeGrant (grant: Grant): string {
  const json: GrantJson = {
    accessToken: grant.accessToken.reveal(),
    tokenType: grant.tokenType,
    obtainedAt: grant.obtainedAt,
    type: grant.type
  }
  if (grant.refreshToken !== undefined) json.refreshToken = grant.refreshToken.reveal()
  if (grant.expiresAt !== undefined) json.expiresAt = grant.expiresAt
  if (grant.scope !== undefined) json.scope = grant.scope
  return JSON.stringify(json)
}

const isString = (v: unknown): v is string => typeof v === 'string'
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)

/** The grant a sealed plaintext holds, its tokens as Secrets. Throws on anything that is not one. */
export function parseGrant (text: string): Grant {
  const raw: unknown = JSON.parse(text)
  if (typeof raw !== 'object' || raw === null) throw new Error('not a grant')
  const g = raw as Record<string, unknown>
  if (!isString(g.accessToken) || !isString(g.tokenType) || !isNumber(g.obtainedAt) || !isString(g.type) ||
    (g.refreshToken !== undefined && !isString(g.refreshToken)) ||
    (g.expiresAt !== undefined && !isNumber(g.expiresAt)) ||
    (g.scope !== undefined && !isString(g.scope))) throw new Error('not a grant')
  return {
    accessToken: new Secret(g.accessToken),
    ...(isString(g.refreshToken) ? { refreshToken: new Secret(g.refreshToken) } : {}),
    tokenType: g.tokenType,
    ...(isNumber(g.expiresAt) ? { expiresAt: g.expiresAt } : {}),
    ...(isString(g.scope) ? { scope: g.scope } : {}),
    obtainedAt: g.obtainedAt,
    type: g.type
  }
}

/** What a listing shows of a grant: never a token. */
export function summaryOf (key: GrantKey, grant: Grant): GrantSummary {
  return {
    key: { upstream: key.upstream, principal: key.principal },
    type: grant.type,
    ...(grant.scope === undefined ? {} : { scope: grant.scope }),
    ...(grant.expiresAt === undefined ? {} : { expiresAt: grant.expiresAt }),
    obtainedAt: grant.obtainedAt,
    refreshable: grant.refreshToken !== undefined
  }
}
