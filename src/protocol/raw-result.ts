// A result relayed as the text it arrived in. The gateway needs only a few of a tool result's
// members (isError, resultType) and relays the rest: parsing a 30 MB result into objects and
// serializing it again cost 7-8× its size in memory and blocked every other session meanwhile.
// A raw result is an ordinary frozen object to every reader: its scalar members are plain values,
// its objects and arrays are parsed the first time someone reads them. Until then the writers
// (messageJson) splice its text into the answer; once a nested value was handed out (and might be
// changed), they serialize the object as before.
import type { Span } from './json-scan.ts'

const RAW = Symbol('switchboard.rawResult')

interface RawState {
  readonly text: string
  /** A nested object or array was handed out: the text may no longer say what the object holds. */
  exposed: boolean
}

interface WithRaw { [RAW]?: RawState }

// A string this long stays text until read: a large text member is not copied for nothing.
const EAGER_STRING_CHARS = 256

/**
 * The result whose JSON text is `text.slice(start, end)` and whose members are at `members`
 * (found by scanMessage, which validated the text). Frozen: a step that changes a result makes a
 * new one (as every step already does), so the text can never be stale at the top level.
 */
export function rawResult (text: string, span: Span, members: ReadonlyMap<string, Span>): Record<string, unknown> {
  const state: RawState = { text: text.slice(span.start, span.end), exposed: false }
  const result: Record<string, unknown> = {}
  for (const [name, at] of members) {
    const first = text.charCodeAt(at.start)
    const container = first === 0x7b || first === 0x5b
    if (!container && (first !== 0x22 || at.end - at.start <= EAGER_STRING_CHARS)) {
      const value: unknown = JSON.parse(text.slice(at.start, at.end))
      // A plain assignment is the fast path; `__proto__` would set the prototype instead of a member.
      if (name === '__proto__') Object.defineProperty(result, name, { value, enumerable: true, writable: true, configurable: true })
      else result[name] = value
      continue
    }
    let value: unknown
    let parsed = false
    Object.defineProperty(result, name, {
      enumerable: true,
      get () {
        if (!parsed) {
          value = JSON.parse(text.slice(at.start, at.end))
          parsed = true
        }
        // A string cannot be changed; an object or array handed out can.
        if (container) state.exposed = true
        return value
      }
    })
  }
  // Not enumerable: a copy made by spreading the result ({ ...result, more }) does not inherit the text.
  Object.defineProperty(result, RAW, { value: state })
  return Object.freeze(result)
}

/** The result's JSON text as it arrived, while it still says what the result holds; else undefined. */
export function rawJsonOf (value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const state = (value as WithRaw)[RAW]
  return state === undefined || state.exposed ? undefined : state.text
}
