// Mutations of JSON-RPC messages for the fuzz tests: each one is a plain value fast-check generates
// (so a seed replays it and a failure shrinks), applied deterministically to a valid message.
import fc from 'fast-check'

/** Nesting stays at or under this: deeper values are the edge's depth limit (issue 24, item 1), fuzzed elsewhere. */
export const MAX_NESTING = 50
const MAX_STRING_CHARS = 64 * 1024

// Numbers JSON can carry but JSON.stringify cannot produce: written into the text in place of these markers.
const NUMBER_LITERALS: Readonly<Record<string, string>> = {
  '@@n:overflow@@': '1e400',
  '@@n:-overflow@@': '-1e400',
  '@@n:underflow@@': '1e-400',
  '@@n:bigint@@': '123456789012345678901234567890',
  '@@n:exp@@': '1E+2',
  '@@n:negzero@@': '-0'
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** A value nested `depth` levels deep in arrays or objects. */
function nested (depth: number, inObjects: boolean, leaf: Json): Json {
  let value = leaf
  for (let i = 0; i < depth; i++) value = inObjects ? { a: value } : [value]
  return value
}

/** Values that stress a parser or a handler: wrong types, edge numbers, long or odd strings, nesting. */
export const oddValue: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>,
  fc.constantFrom<Json>(null, true, false, 0, -1, 1.5, 2 ** 53 + 2, -(2 ** 63), 1.7976931348623157e308, 5e-324, '', '2.0', [], {}, { jsonrpc: '2.0' }),
  fc.constantFrom(...Object.keys(NUMBER_LITERALS)),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.tuple(fc.integer({ min: 1_000, max: MAX_STRING_CHARS }), fc.constantFrom('x', 'é', '€', '\u0000', '"', '\\', '\ud83d\ude00'))
    .map(([length, unit]) => unit.repeat(Math.max(1, Math.floor(length / unit.length / 2)))),
  fc.tuple(fc.integer({ min: 1, max: MAX_NESTING }), fc.boolean(), fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<Json>)
    .map(([depth, inObjects, leaf]) => nested(depth, inObjects, leaf))
)

export type Mutation =
  | { kind: 'delete', at: number }
  | { kind: 'replace', at: number, value: Json }
  | { kind: 'add', at: number, key: string, value: Json }
  | { kind: 'batch', copies: number }

export type TextMutation =
  | { kind: 'truncate', at: number }
  | { kind: 'insert', at: number, text: string }
  | { kind: 'wrap', before: string, after: string }

const KEYS = ['jsonrpc', 'id', 'method', 'params', 'result', 'error', '_meta', 'name', 'arguments', 'cursor', 'uri', 'code', 'message', '__proto__', 'constructor', 'progressToken', 'task', 'traceparent', 'tracestate']

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: oddValue }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add' as const), at: fc.nat(), key: fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 12 })), value: oddValue }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('batch' as const), copies: fc.integer({ min: 0, max: 3 }) }) }
)

export const textMutation: fc.Arbitrary<TextMutation> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: fc.oneof(fc.constantFrom(',', '}', ']', '"', '\\', ':', '{', 'NaN', 'undefined', '\u0000', '\ufeff', ' '), fc.string({ unit: 'binary', maxLength: 8 })) }),
  fc.record({ kind: fc.constant('wrap' as const), before: fc.constantFrom('', '\ufeff', '[', ' \n', 'x'), after: fc.constantFrom('', ']', ',', ' {}', '\n{"jsonrpc":"2.0"}') })
)

/** Every place in a value, depth first: [] is the value itself; arrays by index, objects by key. */
function places (value: unknown, path: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(path)
  if (path.length >= 6) return out
  if (Array.isArray(value)) value.forEach((v, i) => places(v, [...path, i], out))
  else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) places(v, [...path, k], out)
  return out
}

function parentOf (root: unknown, path: Array<string | number>): Record<string | number, unknown> | undefined {
  let node = root
  for (const step of path.slice(0, -1)) node = (node as Record<string | number, unknown>)[step]
  return typeof node === 'object' && node !== null ? node as Record<string | number, unknown> : undefined
}

function nodeAt (root: unknown, path: Array<string | number>): unknown {
  let node = root
  for (const step of path) node = (node as Record<string | number, unknown>)[step]
  return node
}

/** Applies mutations in order to a copy of `message`. */
export function mutate (message: Json, mutations: readonly Mutation[]): Json {
  let root = structuredClone(message)
  for (const m of mutations) {
    if (m.kind === 'batch') {
      root = Array.from({ length: m.copies }, () => structuredClone(root))
      continue
    }
    const all = places(root)
    const path = all[m.at % all.length] as Array<string | number>
    if (m.kind === 'add') {
      const target = nodeAt(root, path)
      if (typeof target === 'object' && target !== null && !Array.isArray(target)) Object.defineProperty(target, m.key, { value: structuredClone(m.value), enumerable: true, writable: true, configurable: true })
      continue
    }
    if (path.length === 0) {
      if (m.kind === 'replace') root = structuredClone(m.value)
      continue
    }
    const parent = parentOf(root, path)
    const key = path.at(-1) as string | number
    if (parent === undefined) continue
    if (m.kind === 'delete') {
      if (Array.isArray(parent)) parent.splice(key as number, 1)
      else delete parent[key]
    } else {
      parent[key] = structuredClone(m.value)
    }
  }
  return root
}

const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder()

/**
 * The message as sent: JSON text with the number markers written out, then any text mutations, as
 * UTF-8 carries it. An insert can cut a surrogate pair in two, and UTF-8 has no lone surrogate (a
 * WebSocket frame and a fetch body carry U+FFFD instead), so the text is what arrives, and an id
 * the test waits for is the id the gateway reads.
 */
export function toText (value: Json, textMutations: readonly TextMutation[] = []): string {
  return fromUtf8.decode(utf8.encode(unencodedText(value, textMutations)))
}

function unencodedText (value: Json, textMutations: readonly TextMutation[]): string {
  let text = JSON.stringify(value)
  for (const [marker, literal] of Object.entries(NUMBER_LITERALS)) text = text.replaceAll(JSON.stringify(marker), literal)
  for (const m of textMutations) {
    if (m.kind === 'truncate') text = text.slice(0, m.at % (text.length + 1))
    else if (m.kind === 'insert') {
      const at = m.at % (text.length + 1)
      text = text.slice(0, at) + m.text + text.slice(at)
    } else text = m.before + text + m.after
  }
  return text
}

/** A request, per JSON-RPC 2.0 and MCP: it must be answered with its id. */
export function isWellFormedRequest (value: unknown): value is { jsonrpc: '2.0', id: string | number, method: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const m = value as Record<string, unknown>
  if (m.jsonrpc !== '2.0' || typeof m.method !== 'string' || !('id' in m)) return false
  if (!(typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id)))) return false
  return m.params === undefined || (typeof m.params === 'object' && m.params !== null && !Array.isArray(m.params))
}

/** What a JSON text parses to, or a marker that it does not parse. */
export function parsed (text: string): { ok: true, value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown }
  } catch {
    return { ok: false }
  }
}

export type { Json }
