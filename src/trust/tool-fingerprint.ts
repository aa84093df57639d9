import { createHash } from 'node:crypto'

/**
 * What a tool's fingerprint covers: everything the model reads or the client validates against.
 * `title` is in because clients show it to the model beside the description. Not covered: `name`
 * (the pin's key), `icons` and `_meta` (presentation and vendor data the model never reads, which
 * servers may change freely, e.g. signed icon URLs).
 */
export const FINGERPRINTED_FIELDS = ['title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const

/** How many hex digits of a fingerprint logs and the CLI show. */
export const FINGERPRINT_PREFIX_LENGTH = 12

/** JSON with object keys sorted at every depth, so key order never changes a fingerprint. */
export function canonicalJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(v => canonicalJson(v === undefined ? null : v)).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).filter(k => (value as Record<string, unknown>)[k] !== undefined).sort()
    return `{${keys.map(k => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** SHA-256 (hex) of the canonical JSON of the fingerprinted fields of a tool definition. */
export function toolFingerprint (tool: Readonly<Record<string, unknown>>): string {
  const covered: Record<string, unknown> = {}
  for (const field of FINGERPRINTED_FIELDS) if (tool[field] !== undefined) covered[field] = tool[field]
  return createHash('sha256').update(canonicalJson(covered)).digest('hex')
}

export function shortFingerprint (fingerprint: string | null | undefined): string {
  return fingerprint === null || fingerprint === undefined ? '-' : fingerprint.slice(0, FINGERPRINT_PREFIX_LENGTH)
}
