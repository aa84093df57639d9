import { z } from 'zod'
import { UNRESOLVED } from './expand-env.ts'

// Zod's issues as the operator reads them: one line per problem at its config path, misspelt keys
// with the key that was probably meant, and nothing that only follows from an unset variable.

export interface ConfigIssue { path: string, message: string }

export function formatPath (path: ReadonlyArray<PropertyKey>): string {
  let out = ''
  for (const key of path) out += typeof key === 'number' ? `[${key}]` : out === '' ? String(key) : `.${String(key)}`
  return out === '' ? '(root)' : out
}

function unwrap (schema: z.ZodType): z.ZodType {
  let current = schema
  while (current instanceof z.ZodDefault || current instanceof z.ZodOptional || current instanceof z.ZodNullable) current = current.unwrap() as z.ZodType
  return current
}

/** The keys the schema knows for the object at `path`; undefined where the path leaves what is known. */
export function knownKeysAt (schema: z.ZodType, path: ReadonlyArray<PropertyKey>): string[] | undefined {
  let current = unwrap(schema)
  for (const key of path) {
    if (current instanceof z.ZodObject && typeof key === 'string' && Object.hasOwn(current.shape, key)) current = current.shape[key] as z.ZodType
    else if (current instanceof z.ZodArray && typeof key === 'number') current = current.element as z.ZodType
    else if (current instanceof z.ZodRecord && typeof key === 'string') current = current.valueType as z.ZodType
    else return undefined
    current = unwrap(current)
  }
  return current instanceof z.ZodObject ? Object.keys(current.shape) : undefined
}

/** Edit distance counting an adjacent transposition as one edit (optimal string alignment). */
export function editDistance (a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => i === 0 ? j : j === 0 ? i : 0))
  const at = (i: number, j: number): number => rows[i]?.[j] ?? Number.POSITIVE_INFINITY
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1)
      ;(rows[i] as number[])[j] = best
    }
  }
  return at(a.length, b.length)
}

/**
 * The known key `key` was probably meant to be: ignoring case, at most 2 edits away for every 5
 * characters of the key (at least 1), the closest first, then the schema's order. A suggestion
 * further away is more often wrong than helpful.
 */
export function closestKey (key: string, known: readonly string[]): string | undefined {
  const limit = Math.max(1, Math.floor(key.length * 0.4))
  let best: { key: string, distance: number } | undefined
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase())
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { key: candidate, distance }
  }
  return best?.key
}

function unrecognizedMessage (keys: readonly string[], known: readonly string[] | undefined): string {
  const described = keys.map((key) => {
    const suggestion = known === undefined ? undefined : closestKey(key, known)
    return suggestion === undefined ? `"${key}"` : `"${key}" (did you mean "${suggestion}"?)`
  })
  return `Unrecognized key${keys.length === 1 ? '' : 's'}: ${described.join(', ')}`
}

function valueAt (doc: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let current = doc
  for (const key of path) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return current
}

/**
 * The schema's issues for `input` (the document as validated). An issue about a value that holds
 * an unset or malformed reference, at its own path or a copy of it (rate limits inherit redis.url),
 * or one whose message quotes such a value, is dropped: the reference is already reported.
 */
export function schemaIssues (error: z.ZodError, input: unknown, schema: z.ZodType): ConfigIssue[] {
  const out: ConfigIssue[] = []
  for (const issue of error.issues) {
    const value = valueAt(input, issue.path)
    if ((typeof value === 'string' && value.includes(UNRESOLVED)) || issue.message.includes(UNRESOLVED)) continue
    const message = issue.code === 'unrecognized_keys' ? unrecognizedMessage(issue.keys, knownKeysAt(schema, issue.path)) : issue.message
    out.push({ path: formatPath(issue.path), message })
  }
  return out
}
