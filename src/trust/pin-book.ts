import type { Finding } from '../guardrails/scanning/finding.ts'
import { parseDefinition, recordedDefinition, type StoredDefinition } from './tool-definition.ts'
import { canonicalJson } from './tool-fingerprint.ts'

// The pins as data, and the decisions made on them. Pure: no I/O, no clock of its own.

/** A definition seen since the pin was taken, waiting for an operator's approval. */
export interface PendingPin {
  fingerprint: string
  seenAt: string
  /** What the new definition says, for the operator (truncated). */
  description?: string
  /** What the definition scan found in it (scanning), for the operator; at most MAX_PENDING_FINDINGS. */
  findings?: Finding[]
  /** 'scan': held only for its scan findings (pinning alone would serve it), so it is released when they go. */
  heldBy?: 'scan'
  /** The new definition itself (capped); absent in records written before definitions were kept. */
  definition?: StoredDefinition
}

export interface PinRecord {
  /** The approved definition; null for a new tool held (newTools: hold) before its first approval. */
  fingerprint: string | null
  pinnedAt: string | null
  /**
   * The approved definition itself (capped). Absent in records written before definitions were
   * kept (and by older replicas): filled in the next time the pinned definition is listed.
   */
  definition?: StoredDefinition
  pending?: PendingPin
  /**
   * The definition whose scan findings an operator approved: the scan holds it no more (a changed
   * definition is scanned, and held, again).
   */
  scanApproved?: string
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
export const MAX_PENDING_FINDINGS = 20

export function decidePin (record: PinRecord | undefined, fingerprint: string, upstreamKnown: boolean, newTools: NewToolsPolicy): PinDecision {
  if (record === undefined) return upstreamKnown && newTools === 'hold' ? 'held' : 'pin'
  if (record.fingerprint === fingerprint) return record.pending === undefined ? 'pinned' : 'reverted'
  return record.fingerprint === null ? 'held' : 'changed'
}

export function stateOf (record: PinRecord): PinState {
  if (record.fingerprint === null) return 'held'
  return record.pending === undefined ? 'pinned' : 'changed'
}

/**
 * The record with its pending definition approved, or undefined when nothing is pending. Approving
 * a definition with scan findings approves those findings too, for that definition only.
 */
export function approvePin (record: PinRecord, now: Date): PinRecord | undefined {
  const { pending } = record
  if (pending === undefined) return undefined
  const approved: PinRecord = { fingerprint: pending.fingerprint, pinnedAt: now.toISOString() }
  if (pending.definition !== undefined) approved.definition = pending.definition
  if (pending.findings !== undefined || record.scanApproved === pending.fingerprint) approved.scanApproved = pending.fingerprint
  return approved
}

/** The pending record of a listed tool's definition (`tool`: the definition as listed). */
export function pendingPin (fingerprint: string, tool: Readonly<Record<string, unknown>>, now: Date, findings?: readonly Finding[], heldBy?: 'scan'): PendingPin {
  const pending: PendingPin = { fingerprint, seenAt: now.toISOString() }
  if (typeof tool.description === 'string') pending.description = tool.description.slice(0, MAX_PENDING_DESCRIPTION)
  if (findings !== undefined && findings.length > 0) pending.findings = findings.slice(0, MAX_PENDING_FINDINGS).map(f => ({ rule: f.rule, path: f.path, reason: f.reason }))
  if (heldBy !== undefined) pending.heldBy = heldBy
  pending.definition = recordedDefinition(tool)
  return pending
}

/** The stored findings of a pending definition, kept only where well-formed (the store is data from outside). */
export function pendingFindings (pending: PendingPin | undefined): Finding[] {
  const list: unknown = pending?.findings
  if (!Array.isArray(list)) return []
  return list.filter((f): f is Finding => f !== null && typeof f === 'object' &&
    typeof (f as Finding).rule === 'string' && typeof (f as Finding).path === 'string' && typeof (f as Finding).reason === 'string')
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
  const definition = parseDefinition(value.definition)
  if (definition !== undefined) out.definition = definition
  if (value.pending !== undefined) {
    // Kept whole, as older versions keep it; only a malformed definition is dropped.
    const { definition: seen, ...pending } = value.pending
    const parsed = parseDefinition(seen)
    out.pending = parsed === undefined ? pending : { ...pending, definition: parsed }
  }
  if (typeof value.scanApproved === 'string') out.scanApproved = value.scanApproved
  return out
}

/**
 * The pins as canonical JSON with each definition reduced to whether (and how) it is recorded, for
 * telling whether a re-read of the store changed anything: a definition differs only where its
 * fingerprint does or where one was filled in, and the schemas themselves made most of the cost of
 * a comparison that runs on every re-read.
 */
export function pinsSummary (data: PinData): string {
  const recorded = (d: StoredDefinition | undefined): string | undefined => d === undefined ? undefined : 'truncated' in d ? 'truncated' : 'recorded'
  const summary: Record<string, Record<string, unknown>> = {}
  for (const [upstream, records] of Object.entries(data)) {
    const tools: Record<string, unknown> = {}
    for (const [tool, record] of Object.entries(records)) {
      const { pending } = record
      setOwn(tools, tool, { ...record, definition: recorded(record.definition), pending: pending === undefined ? undefined : { ...pending, definition: recorded(pending.definition) } })
    }
    setOwn(summary, upstream, tools)
  }
  return canonicalJson(summary)
}

/** A copy to merge into: records are never changed in place (each change is a new record), so the maps are copied, not the records. */
export function copyPins (data: PinData): PinData {
  const copy: PinData = {}
  for (const [upstream, records] of Object.entries(data)) setOwn(copy, upstream, { ...records })
  return copy
}

/** Tool names are data: a tool called `__proto__` must become a key, never a prototype. */
export function setOwn<T> (record: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true })
}

export function getOwn<T> (record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined
}
