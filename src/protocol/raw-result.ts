// A result relayed as the bytes it arrived in. The gateway needs only a few of a tool result's
// members (isError, resultType) and relays the rest: parsing a 30 MB result into objects and
// serializing it again cost 7-8× its size in memory and blocked every other session meanwhile.
// A raw result is an ordinary frozen object to every reader: its scalar members are plain values,
// its objects and arrays are parsed the first time someone reads them. Until then the writers
// (messageBody, keptJson) splice its bytes into the answer; once a nested value was handed out (and
// might be changed), they serialize the object as before.
import { ByteText } from './byte-text.ts'
import type { Span } from './json-scan.ts'

const RAW = Symbol('switchboard.rawResult')

interface RawState {
  /** The whole message, and where the result is in it (sliced when a writer asks, most never do). */
  readonly message: ByteText
  readonly span: Span
  readonly members: ReadonlyMap<string, Span>
  /** Members whose object or array was handed out: the bytes may no longer say what they hold. */
  exposed: string[] | undefined
}

interface WithRaw { [RAW]?: RawState }

// A string this long stays bytes until read: a large text member is not decoded for nothing.
const EAGER_STRING_BYTES = 256

/**
 * The result whose JSON is `message.slice(span)` and whose members are at `members` (offsets in
 * `message`, found by MessageScanner, which validated it). Frozen: a step that changes a result
 * makes a new one (as every step already does), so the bytes can never be stale at the top level.
 */
export function rawResult (message: ByteText, span: Span, members: ReadonlyMap<string, Span>): Record<string, unknown> {
  const state: RawState = { message, span, members, exposed: undefined }
  const result: Record<string, unknown> = {}
  for (const [name, at] of members) {
    const first = message.byteAt(at.start)
    const container = first === 0x7b || first === 0x5b
    if (!container && (first !== 0x22 || at.end - at.start <= EAGER_STRING_BYTES)) {
      const value: unknown = JSON.parse(message.toString(at.start, at.end))
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
          value = JSON.parse(message.toString(at.start, at.end))
          parsed = true
        }
        // A string cannot be changed; an object or array handed out can.
        if (container && state.exposed?.includes(name) !== true) (state.exposed ??= []).push(name)
        return value
      }
    })
  }
  // Not enumerable: a copy made by spreading the result ({ ...result, more }) does not inherit the bytes.
  Object.defineProperty(result, RAW, { value: state })
  return Object.freeze(result)
}

/** The result's JSON bytes as they arrived, while they still say what the result holds; else undefined. */
export function rawBytesOf (value: unknown): ByteText | undefined {
  const state = rawStateOf(value)
  return state?.message.slice(state.span.start, state.span.end)
}

/** The same as text (decoded on each ask: the writers of large answers use the bytes instead). */
export function rawJsonOf (value: unknown): string | undefined {
  const state = rawStateOf(value)
  return state === undefined ? undefined : state.message.toString(state.span.start, state.span.end)
}

/** How many bytes the result's JSON takes, while they still say what the result holds. */
export function rawByteLength (value: unknown): number | undefined {
  const state = rawStateOf(value)
  return state === undefined ? undefined : state.span.end - state.span.start
}

/**
 * A raw result with `changes` set (members of those names replaced, the rest in their order, as
 * the bytes they arrived as): what the 2026-07-28 era adds to every result (resultType, _meta)
 * without serializing the rest again. Undefined when `result` is not raw, or when a member not
 * replaced was handed out and might have been changed.
 */
export function rawWith (result: unknown, changes: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const state = typeof result === 'object' && result !== null ? (result as WithRaw)[RAW] : undefined
  if (state === undefined || state.exposed?.some(name => !Object.hasOwn(changes, name)) === true) return undefined
  const pieces: Buffer[] = [OPEN]
  const members = new Map<string, Span>()
  let length = 1
  const add = (name: string, bytes: readonly Buffer[], valueStart: number, valueEnd: number): void => {
    if (members.size > 0) {
      pieces.push(COMMA)
      length++
    }
    const at = length
    for (const piece of bytes) {
      pieces.push(piece)
      length += piece.length
    }
    members.set(name, { start: at + valueStart, end: at + valueEnd, name: at })
  }
  for (const [name, at] of state.members) {
    if (Object.hasOwn(changes, name)) continue
    if (at.name === undefined) return undefined
    add(name, state.message.slice(at.name, at.end).pieces, at.start - at.name, at.end - at.name)
  }
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) continue
    const key = Buffer.from(`${JSON.stringify(name)}:`)
    const json = Buffer.from(JSON.stringify(value))
    add(name, [key, json], key.length, key.length + json.length)
  }
  pieces.push(CLOSE)
  length++
  return rawResult(ByteText.of(pieces), { start: 0, end: length }, members)
}

const OPEN = Buffer.from('{')
const COMMA = Buffer.from(',')
const CLOSE = Buffer.from('}')

function rawStateOf (value: unknown): RawState | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const state = (value as WithRaw)[RAW]
  return state === undefined || state.exposed !== undefined ? undefined : state
}
