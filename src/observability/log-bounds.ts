// Bounds on what one log line may carry: a client controls clientInfo.name, tool arguments, error
// texts of its upstream calls; none of them may turn a line into a megabyte.

export { DEFAULT_MAX_STRING_CHARS } from '../config/logging-schema.ts'
/** Deeper than this, a value is replaced by a marker: a log line is not a data dump. */
const MAX_DEPTH = 10
/** Entries kept per object or array; the rest are counted in a marker. */
const MAX_ENTRIES = 200

/** `abc…[truncated 1048576 chars]`: what was kept, then how much was cut. */
export function truncateString (value: string, max: number): string {
  if (value.length <= max) return value
  return `${value.slice(0, max)}…[truncated ${value.length - max} chars]`
}

function isPlainObject (value: object): value is Record<string, unknown> {
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * `value` with every string cut at `max` characters, objects and arrays past MAX_ENTRIES entries or
 * MAX_DEPTH levels cut too. Copies only what it changes, so a line within bounds costs a walk and no
 * allocation. Errors with a long message or stack become an Error with both cut (other fields dropped);
 * other class instances are left to their own toJSON. `redact` (the secret registry's values, see
 * secret-registry.ts) applies to every string and Error text first.
 */
export function boundForLog (value: unknown, max: number, depth = 0, redact?: (text: string) => string): unknown {
  if (typeof value === 'string') return truncateString(redact === undefined ? value : redact(value), max)
  if (value === null || typeof value !== 'object') return value
  if (value instanceof Error) {
    const message = redact === undefined ? value.message : redact(value.message)
    const stack = redact === undefined ? value.stack ?? '' : redact(value.stack ?? '')
    if (message === value.message && stack === (value.stack ?? '') && message.length <= max && stack.length <= max * 4) return value
    const copy = new Error(truncateString(message, max))
    copy.name = value.name
    copy.stack = truncateString(stack, max * 4)
    return copy
  }
  if (Array.isArray(value)) {
    if (depth >= MAX_DEPTH) return `[truncated: array nested ${depth} deep]`
    let out: unknown[] | undefined
    const kept = Math.min(value.length, MAX_ENTRIES)
    for (let i = 0; i < kept; i++) {
      const item: unknown = value[i]
      const bounded = boundForLog(item, max, depth + 1, redact)
      if (bounded !== item && out === undefined) out = value.slice(0, kept)
      if (out !== undefined) out[i] = bounded
    }
    if (value.length > kept) {
      out ??= value.slice(0, kept)
      out.push(`[truncated ${value.length - kept} items]`)
    }
    return out ?? value
  }
  if (!isPlainObject(value)) return value
  if (depth >= MAX_DEPTH) return `[truncated: object nested ${depth} deep]`
  let out: Record<string, unknown> | undefined
  let count = 0
  let dropped = 0
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    if (++count > MAX_ENTRIES) {
      dropped++
      continue
    }
    const item = value[key]
    const boundedKey = truncateString(key, max)
    const bounded = boundForLog(item, max, depth + 1, redact)
    if ((bounded !== item || boundedKey !== key) && out === undefined) {
      out = {}
      for (const earlier in value) {
        if (earlier === key) break
        if (Object.hasOwn(value, earlier)) out[earlier] = value[earlier]
      }
    }
    if (out !== undefined) out[boundedKey] = bounded
  }
  if (dropped > 0) {
    out ??= Object.fromEntries(Object.entries(value).slice(0, MAX_ENTRIES))
    out['[truncated]'] = `${dropped} more keys`
  }
  return out ?? value
}
