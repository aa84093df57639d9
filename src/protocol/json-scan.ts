// One validating pass over a JSON-RPC message's text that finds where its members are without
// building them: the gateway reads the envelope it needs (jsonrpc, id, result or error) and the
// top-level members of a result, and relays the rest as the text it arrived as. Iterative (an
// explicit stack), so no nesting overflows it; it accepts exactly what JSON.parse accepts.

/** Where a member's value is in the text: [start, end). */
export interface Span { readonly start: number, readonly end: number }

export interface MessageScan {
  /** The top-level members, by name (the last of a repeated name wins, as in JSON.parse). */
  readonly members: Map<string, Span>
  /** The members of the `result` object, when there is one. */
  readonly resultMembers: Map<string, Span> | undefined
  /** A line break appears in the text (as whitespace): it cannot be relayed inside an SSE `data:` line as it is. */
  readonly lineBreaks: boolean
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const COMMA = 0x2c
const COLON = 0x3a
const MINUS = 0x2d
const PLUS = 0x2b
const DOT = 0x2e
const ZERO = 0x30
const NINE = 0x39
const OBJECT = 0
const ARRAY = 1

/**
 * Scans `text` as one JSON object. Undefined when it is not valid JSON, or not an object: the
 * caller then parses it the ordinary way, which says what is wrong.
 */
export function scanMessage (text: string): MessageScan | undefined {
  const n = text.length
  sawLineBreak = false
  let i = skipWhitespace(text, 0)
  if (text.charCodeAt(i) !== OPEN_BRACE) return undefined
  const members = new Map<string, Span>()
  let resultMembers: Map<string, Span> | undefined
  const stack: number[] = []
  // The member whose value is being read at depth 1 (top level) and depth 2 (inside `result`).
  let key1: string | undefined
  let start1 = 0
  let key2: string | undefined
  let start2 = 0
  let inResult = false
  let expectKey = false
  for (;;) {
    if (expectKey) {
      // A member: "name" : value
      if (text.charCodeAt(i) !== QUOTE) return undefined
      const end = skipString(text, i)
      if (end < 0) return undefined
      const depth = stack.length
      if (depth <= 2) {
        const name = memberName(text, i, end)
        i = skipWhitespace(text, end)
        if (text.charCodeAt(i) !== COLON) return undefined
        i = skipWhitespace(text, i + 1)
        if (depth === 1) { key1 = name; start1 = i } else if (inResult) { key2 = name; start2 = i }
      } else {
        i = skipWhitespace(text, end)
        if (text.charCodeAt(i) !== COLON) return undefined
        i = skipWhitespace(text, i + 1)
      }
      expectKey = false
    }
    // A value starts at i.
    const c = text.charCodeAt(i)
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (stack.length === 1 && c === OPEN_BRACE && key1 === 'result') { inResult = true; resultMembers = new Map() }
      stack.push(c === OPEN_BRACE ? OBJECT : ARRAY)
      i = skipWhitespace(text, i + 1)
      const close = text.charCodeAt(i)
      if (c === OPEN_BRACE && close !== CLOSE_BRACE) { expectKey = true; continue }
      if (c === OPEN_BRACKET && close !== CLOSE_BRACKET) continue
      stack.pop()
      i++
    } else {
      i = skipScalar(text, i, c)
      if (i < 0) return undefined
    }
    // A value ended at i: record it if it is a member we keep, then a comma or a close.
    for (;;) {
      const depth = stack.length
      if (depth === 0) return skipWhitespace(text, i) === n ? { members, resultMembers, lineBreaks: sawLineBreak } : undefined
      if (depth === 1 && key1 !== undefined) {
        members.set(key1, { start: start1, end: i })
        if (key1 === 'result') inResult = false
        key1 = undefined
      } else if (depth === 2 && key2 !== undefined) {
        resultMembers?.set(key2, { start: start2, end: i })
        key2 = undefined
      }
      i = skipWhitespace(text, i)
      const next = text.charCodeAt(i)
      const open = stack[depth - 1]
      if (next === COMMA) {
        i = skipWhitespace(text, i + 1)
        expectKey = open === OBJECT
        break
      }
      if ((open === OBJECT && next === CLOSE_BRACE) || (open === ARRAY && next === CLOSE_BRACKET)) {
        stack.pop()
        i++
        continue
      }
      return undefined
    }
  }
}

/** Whether skipWhitespace met a line break during the current scan (one scan runs at a time: it is synchronous). */
let sawLineBreak = false

function skipWhitespace (text: string, from: number): number {
  let i = from
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c === 0x20 || c === 0x09) i++
    else if (c === 0x0a || c === 0x0d) { sawLineBreak = true; i++ } else break
  }
  return i
}

/** A member's name: the text between the quotes, decoded only when it has escapes. */
function memberName (text: string, start: number, end: number): string {
  const inner = text.slice(start + 1, end - 1)
  return inner.includes('\\') ? JSON.parse(text.slice(start, end)) as string : inner
}

/** The end of the string, number or literal at i, or -1 when there is none. */
function skipScalar (text: string, i: number, c: number): number {
  if (c === QUOTE) return skipString(text, i)
  if (c === MINUS || (c >= ZERO && c <= NINE)) return skipNumber(text, i)
  if (text.startsWith('true', i) || text.startsWith('null', i)) return i + 4
  if (text.startsWith('false', i)) return i + 5
  return -1
}

/** The index after the closing quote of the string that opens at i, or -1 when it is not a valid JSON string. */
export function skipString (text: string, from: number): number {
  const n = text.length
  let i = from + 1
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) return i + 1
    if (c < 0x20) return -1
    if (c !== BACKSLASH) { i++; continue }
    const e = text.charCodeAt(i + 1)
    if (e === 0x75) { // \uXXXX
      for (let k = i + 2; k < i + 6; k++) if (!isHex(text.charCodeAt(k))) return -1
      i += 6
    } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      i += 2
    } else {
      return -1
    }
  }
  return -1
}

function isHex (c: number): boolean {
  return (c >= ZERO && c <= NINE) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

function digits (text: string, from: number): number {
  let i = from
  while (i < text.length) {
    const c = text.charCodeAt(i)
    if (c < ZERO || c > NINE) break
    i++
  }
  return i
}

/** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
function skipNumber (text: string, from: number): number {
  let i = from
  if (text.charCodeAt(i) === MINUS) i++
  const first = text.charCodeAt(i)
  if (first === ZERO) i++
  else if (first > ZERO && first <= NINE) i = digits(text, i + 1)
  else return -1
  if (text.charCodeAt(i) === DOT) {
    const end = digits(text, i + 1)
    if (end === i + 1) return -1
    i = end
  }
  const e = text.charCodeAt(i)
  if (e === 0x65 || e === 0x45) {
    i++
    const sign = text.charCodeAt(i)
    if (sign === PLUS || sign === MINUS) i++
    const end = digits(text, i)
    if (end === i) return -1
    i = end
  }
  return i
}
