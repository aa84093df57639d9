import { canonicalJson, FINGERPRINTED_FIELDS } from './tool-fingerprint.ts'

// The tool definitions a pin record keeps beside its fingerprints, so an operator (the console's
// Trust page, `switchboard pins list --definitions`) can see what was approved and what changed.
// Pure: no I/O.

/** A definition as recorded: its name and exactly the fields its fingerprint covers. */
export interface RecordedDefinition {
  name: string
  title?: unknown
  description?: unknown
  inputSchema?: unknown
  outputSchema?: unknown
  annotations?: unknown
}

/** Recorded in place of a definition whose JSON is over MAX_DEFINITION_BYTES. */
export interface TruncatedDefinition { truncated: true, bytes: number }

export type StoredDefinition = RecordedDefinition | TruncatedDefinition

/**
 * The most JSON one stored definition may take (UTF-8 bytes). Every record keeps up to two (the
 * pinned and the pending one), in the store, in each gateway's memory and in GET /admin/pins: a
 * bound per tool keeps all three bounded whatever an upstream lists.
 */
export const MAX_DEFINITION_BYTES = 64 * 1024

export function isTruncatedDefinition (definition: StoredDefinition): definition is TruncatedDefinition {
  return (definition as Partial<TruncatedDefinition>).truncated === true
}

/**
 * The definition to record for a listed tool: name first, then the fingerprinted fields in their
 * fixed order, each with its object keys sorted (as the fingerprint reads them), so two recorded
 * definitions differ exactly where their fingerprints do and a diff shows no key-order noise.
 */
export function recordedDefinition (tool: Readonly<Record<string, unknown>>): StoredDefinition {
  const definition: RecordedDefinition = { name: typeof tool.name === 'string' ? tool.name : '' }
  for (const field of FINGERPRINTED_FIELDS) {
    if (tool[field] !== undefined) definition[field] = JSON.parse(canonicalJson(tool[field])) as unknown
  }
  return capped(definition)
}

function capped (definition: RecordedDefinition): StoredDefinition {
  const bytes = Buffer.byteLength(JSON.stringify(definition), 'utf8')
  return bytes > MAX_DEFINITION_BYTES ? { truncated: true, bytes } : definition
}

/**
 * A stored definition, kept only where well-formed (the store is data from outside) and capped
 * again (a hand-edited file or another writer may hold more); undefined otherwise.
 */
export function parseDefinition (value: unknown): StoredDefinition | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined
  const v = value as Record<string, unknown>
  if (v.truncated === true) return typeof v.bytes === 'number' && Number.isFinite(v.bytes) ? { truncated: true, bytes: v.bytes } : undefined
  if (typeof v.name !== 'string') return undefined
  const definition: RecordedDefinition = { name: v.name }
  for (const field of FINGERPRINTED_FIELDS) if (v[field] !== undefined) definition[field] = v[field]
  return capped(definition)
}
