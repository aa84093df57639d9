// The pins as data, and the decisions made on them. Pure: no I/O, no clock of its own.

/** A definition seen since the pin was taken, waiting for an operator's approval. */
export interface PendingPin {
  fingerprint: string
  seenAt: string
  /** What the new definition says, for the operator (truncated). */
  description?: string
}

export interface PinRecord {
  /** The approved definition; null for a new tool held (newTools: hold) before its first approval. */
  fingerprint: string | null
  pinnedAt: string | null
  pending?: PendingPin
}

/** upstream → tool (the upstream's own name) → record. */
export type PinData = Record<string, Record<string, PinRecord>>

export interface PinFile { version: 1, upstreams: PinData }

/** pinned: serving the approved definition; changed: differs from its pin; held: new, never approved. */
export type PinState = 'pinned' | 'changed' | 'held'

export type NewToolsPolicy = 'pin' | 'hold'

/**
 * What to do with a listed tool:
 * - `pinned`: matches its pin, nothing to do
 * - `pin`: first sight, take the pin now (trust on first use)
 * - `reverted`: matches its pin again after a pending change; drop the pending one
 * - `changed`: differs from its pin
 * - `held`: new tool of a known upstream under newTools: hold (or still unapproved)
 */
export type PinDecision = 'pinned' | 'pin' | 'reverted' | 'changed' | 'held'

export const MAX_PENDING_DESCRIPTION = 500

export function decidePin (record: PinRecord | undefined, fingerprint: string, upstreamKnown: boolean, newTools: NewToolsPolicy): PinDecision {
  if (record === undefined) return upstreamKnown && newTools === 'hold' ? 'held' : 'pin'
  if (record.fingerprint === fingerprint) return record.pending === undefined ? 'pinned' : 'reverted'
  return record.fingerprint === null ? 'held' : 'changed'
}

export function stateOf (record: PinRecord): PinState {
  if (record.fingerprint === null) return 'held'
  return record.pending === undefined ? 'pinned' : 'changed'
}

/** The record with its pending definition approved, or undefined when nothing is pending. */
export function approvePin (record: PinRecord, now: Date): PinRecord | undefined {
  if (record.pending === undefined) return undefined
  return { fingerprint: record.pending.fingerprint, pinnedAt: now.toISOString() }
}

export function pendingPin (fingerprint: string, description: unknown, now: Date): PendingPin {
  const pending: PendingPin = { fingerprint, seenAt: now.toISOString() }
  if (typeof description === 'string') pending.description = description.slice(0, MAX_PENDING_DESCRIPTION)
  return pending
}

function isRecordShape (value: unknown): value is PinRecord {
  if (value === null || typeof value !== 'object') return false
  const r = value as Record<string, unknown>
  const pending = r.pending as Record<string, unknown> | undefined
  return (typeof r.fingerprint === 'string' || r.fingerprint === null) &&
    (pending === undefined || (pending !== null && typeof pending === 'object' && typeof pending.fingerprint === 'string'))
}

/** Parses one stored record; undefined for anything that is not one (the tool then counts as unseen). */
export function parsePinRecord (value: unknown): PinRecord | undefined {
  if (!isRecordShape(value)) return undefined
  const out: PinRecord = { fingerprint: value.fingerprint, pinnedAt: typeof value.pinnedAt === 'string' ? value.pinnedAt : null }
  if (value.pending !== undefined) out.pending = value.pending
  return out
}

/** Tool names are data: a tool called `__proto__` must become a key, never a prototype. */
export function setOwn<T> (record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })
}

export function getOwn<T> (record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined
}
