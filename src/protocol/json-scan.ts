// One validating pass over a JSON-RPC message's UTF-8 bytes that finds where its members are without
// building them: the gateway reads the envelope it needs (jsonrpc, id, result or error) and the
// top-level members of a result, and relays the rest as the bytes it arrived as. Incremental: a
// message that arrives in many chunks is scanned chunk by chunk as they come, so a 30 MB result
// never holds the event loop for one long pass. Iterative (an explicit stack), so no nesting
// overflows it; it accepts exactly what JSON.parse accepts of valid UTF-8, and refuses invalid UTF-8
// (which decoding would have replaced): such a message is parsed the ordinary way instead.
import { isUtf8 } from 'node:buffer'

/** Where a member's value is in the message, in bytes: [start, end). */
export interface Span {
  readonly start: number
  readonly end: number
  /** Where the member's name starts (its opening quote), for the members of `result`. */
  readonly name?: number
}

export interface MessageScan {
  /** The top-level members, by name (the last of a repeated name wins, as in JSON.parse). */
  readonly members: Map<string, Span>
  /** The members of the `result` object, when there is one. */
  readonly resultMembers: Map<string, Span> | undefined
  /** A line break stands between the tokens of the result: it cannot be relayed inside an SSE `data:` line as it is. */
  readonly lineBreaks: boolean
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const OBJECT = 0
const ARRAY = 1

// What the next byte may be.
const START = 0
const VALUE = 1
const VALUE_OR_CLOSE = 2
const KEY = 3
const KEY_OR_CLOSE = 4
const COLON = 5
const AFTER = 6
const STRING = 7
const ESCAPE = 8
const HEX = 9
const NUMBER = 10
const LITERAL = 11
const DONE = 12
const FAILED = 13

// Where a number is: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
const N_MINUS = 0
const N_ZERO = 1
const N_INT = 2
const N_DOT = 3
const N_FRAC = 4
const N_E = 5
const N_SIGN = 6
const N_EXP = 7
const NUMBER_MAY_END = [false, true, true, false, true, false, false, true]

/** The number state after byte c, or -1 when c does not continue the number. */
function numberStep (state: number, c: number): number {
  const digit = c >= 0x30 && c <= 0x39
  switch (state) {
    case N_MINUS: return c === 0x30 ? N_ZERO : digit ? N_INT : -1
    case N_ZERO: return c === 0x2e ? N_DOT : c === 0x65 || c === 0x45 ? N_E : -1
    case N_INT: return digit ? N_INT : c === 0x2e ? N_DOT : c === 0x65 || c === 0x45 ? N_E : -1
    case N_DOT: return digit ? N_FRAC : -1
    case N_FRAC: return digit ? N_FRAC : c === 0x65 || c === 0x45 ? N_E : -1
    case N_E: return c === 0x2b || c === 0x2d ? N_SIGN : digit ? N_EXP : -1
    default: return digit ? N_EXP : -1 // N_SIGN, N_EXP
  }
}

function isHex (c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

/** Scans one message given in pieces, in order: push each, then end(). */
export class MessageScanner {
  private state = START
  /** Absolute offset of the next byte pushed. */
  private offset = 0
  private readonly stack: number[] = []
  private members = new Map<string, Span>()
  private resultMembers: Map<string, Span> | undefined
  private inResult = false
  private lineBreaks = false
  // The member whose value is being read at depth 1 (top level) and depth 2 (inside `result`).
  private key1: string | undefined
  private start1 = 0
  private key2: string | undefined
  private start2 = 0
  private name2 = 0
  // The string being read: a key whose name is kept, in pieces when it spans pushes.
  private stringIsKey = false
  private capture = false
  private keyParts: Buffer[] | undefined
  private keyFrom = 0
  private keyEscaped = false
  private hexLeft = 0
  private number = 0
  private literal = ''
  private literalAt = 0
  // A UTF-8 sequence cut by the end of a push.
  private carry: number[] | undefined
  private carryNeed = 0

  /** Ready for another message (scans that ended keep their maps: new ones are made). */
  reset (): void {
    this.state = START
    this.offset = 0
    this.stack.length = 0
    this.members = new Map()
    this.resultMembers = undefined
    this.inResult = false
    this.lineBreaks = false
    this.key1 = undefined
    this.key2 = undefined
    this.capture = false
    this.keyParts = undefined
    this.carry = undefined
    this.carryNeed = 0
  }

  /** Scans b[from, to). False once the message is known not to be a valid JSON object. */
  push (b: Buffer, from = 0, to = b.length): boolean {
    if (this.state === FAILED) return false
    // Bytes from 0x80 up can only stand in strings (anywhere else the scan fails): validated after.
    let high = this.carryNeed > 0
    const base = this.offset - from
    this.offset += to - from
    let state = this.state
    if (this.capture && (state === STRING || state === ESCAPE || state === HEX)) this.keyFrom = from
    let i = from
    while (i < to) {
      const c = b[i] as number
      switch (state) {
        case STRING: {
          let j = i
          while (j < to) {
            const d = b[j] as number
            if (d >= 0x80) high = true
            else if (d === QUOTE || d === BACKSLASH || d < 0x20) break
            j++
          }
          if (j === to) { i = j; break }
          const d = b[j] as number
          if (d === QUOTE) {
            i = j + 1
            state = this.stringIsKey ? this.keyEnded(b, j) : this.valueEnded(base + i)
          } else if (d === BACKSLASH) {
            i = j + 1
            state = ESCAPE
            if (this.capture) this.keyEscaped = true
          } else {
            return this.fail()
          }
          break
        }
        case ESCAPE:
          if (c === 0x75) {
            state = HEX
            this.hexLeft = 4
          } else if (c === QUOTE || c === BACKSLASH || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) {
            state = STRING
          } else {
            return this.fail()
          }
          i++
          break
        case HEX:
          if (!isHex(c)) return this.fail()
          if (--this.hexLeft === 0) state = STRING
          i++
          break
        case NUMBER: {
          const next = numberStep(this.number, c)
          if (next >= 0) {
            this.number = next
            i++
          } else if (NUMBER_MAY_END[this.number] === true) {
            state = this.valueEnded(base + i) // c is read again, after the number
          } else {
            return this.fail()
          }
          break
        }
        case LITERAL:
          if (c !== this.literal.charCodeAt(this.literalAt)) return this.fail()
          i++
          if (++this.literalAt === this.literal.length) state = this.valueEnded(base + i)
          break
        default:
          // Between tokens.
          if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) {
            if (this.inResult && (c === 0x0a || c === 0x0d)) this.lineBreaks = true
            i++
            break
          }
          state = this.token(state, c, base + i, i)
          if (state === FAILED) return this.fail()
          i++
      }
    }
    if (this.capture && (state === STRING || state === ESCAPE || state === HEX)) (this.keyParts ??= []).push(b.subarray(this.keyFrom, to))
    this.state = state
    if (high && !this.utf8(b, from, to)) return this.fail()
    return true
  }

  /** The scan of the whole message, or undefined when it is not one valid JSON object. */
  end (): MessageScan | undefined {
    if (this.state !== DONE || this.carryNeed > 0) return undefined
    return { members: this.members, resultMembers: this.resultMembers, lineBreaks: this.lineBreaks }
  }

  /** A structural byte or the first byte of a value, at absolute offset `at` (index `i` in the push). */
  private token (state: number, c: number, at: number, i: number): number {
    switch (state) {
      case START:
        if (c !== OPEN_BRACE) return FAILED
        this.stack.push(OBJECT)
        return KEY_OR_CLOSE
      case KEY_OR_CLOSE:
      case KEY:
        if (c === CLOSE_BRACE && state === KEY_OR_CLOSE) return this.closed(at + 1)
        if (c !== QUOTE) return FAILED
        this.stringIsKey = true
        this.capture = this.stack.length === 1 || (this.stack.length === 2 && this.inResult)
        if (this.stack.length === 2) this.name2 = at
        if (this.capture) {
          this.keyParts = undefined
          this.keyFrom = i + 1
          this.keyEscaped = false
        }
        return STRING
      case COLON:
        return c === 0x3a ? VALUE : FAILED
      case AFTER: {
        const open = this.stack[this.stack.length - 1]
        if (c === 0x2c) return open === OBJECT ? KEY : VALUE
        if ((open === OBJECT && c === CLOSE_BRACE) || (open === ARRAY && c === CLOSE_BRACKET)) return this.closed(at + 1)
        return FAILED
      }
      case VALUE_OR_CLOSE:
        if (c === CLOSE_BRACKET) return this.closed(at + 1)
        return this.valueStarts(c, at)
      case VALUE:
        return this.valueStarts(c, at)
      default: // DONE: nothing but whitespace after the message
        return FAILED
    }
  }

  private valueStarts (c: number, at: number): number {
    const depth = this.stack.length
    if (depth === 1) this.start1 = at
    else if (depth === 2 && this.inResult) this.start2 = at
    switch (c) {
      case OPEN_BRACE:
        if (depth === 1 && this.key1 === 'result') {
          this.inResult = true
          this.resultMembers = new Map()
        }
        this.stack.push(OBJECT)
        return KEY_OR_CLOSE
      case OPEN_BRACKET:
        this.stack.push(ARRAY)
        return VALUE_OR_CLOSE
      case QUOTE:
        this.stringIsKey = false
        this.capture = false
        return STRING
      case 0x2d:
        this.number = N_MINUS
        return NUMBER
      case 0x30:
        this.number = N_ZERO
        return NUMBER
      case 0x74: return this.literalStarts('true')
      case 0x66: return this.literalStarts('false')
      case 0x6e: return this.literalStarts('null')
      default:
        if (c > 0x30 && c <= 0x39) {
          this.number = N_INT
          return NUMBER
        }
        return FAILED
    }
  }

  private literalStarts (literal: string): number {
    this.literal = literal
    this.literalAt = 1
    return LITERAL
  }

  /** A container closed; `end` is the offset after its closing byte. */
  private closed (end: number): number {
    this.stack.pop()
    return this.valueEnded(end)
  }

  /** A value ended at `end`: record it when it is a member we keep. */
  private valueEnded (end: number): number {
    const depth = this.stack.length
    if (depth === 0) return DONE
    if (depth === 1 && this.key1 !== undefined) {
      this.members.set(this.key1, { start: this.start1, end })
      if (this.key1 === 'result') this.inResult = false
      this.key1 = undefined
    } else if (depth === 2 && this.inResult && this.key2 !== undefined) {
      this.resultMembers?.set(this.key2, { start: this.start2, end, name: this.name2 })
      this.key2 = undefined
    }
    return AFTER
  }

  /** A key's closing quote is at b[quote]. */
  private keyEnded (b: Buffer, quote: number): number {
    if (!this.capture) return COLON
    const parts = this.keyParts
    this.keyParts = undefined
    this.capture = false
    const known = parts === undefined && !this.keyEscaped ? knownName(b, this.keyFrom, quote) : undefined
    const raw = known ?? (parts === undefined ? b.toString('utf8', this.keyFrom, quote) : Buffer.concat([...parts, b.subarray(this.keyFrom, quote)]).toString('utf8'))
    const name = this.keyEscaped ? JSON.parse(`"${raw}"`) as string : raw
    if (this.stack.length === 1) this.key1 = name
    else this.key2 = name
    return COLON
  }

  private fail (): false {
    this.state = FAILED
    this.keyParts = undefined
    return false
  }

  /** Whether b[from, to) continues valid UTF-8; a sequence cut at `to` is checked when its rest arrives. */
  private utf8 (b: Buffer, from: number, to: number): boolean {
    let s = from
    const carry = this.carry
    if (carry !== undefined) {
      while (s < to && carry.length < this.carryNeed) carry.push(b[s++] as number)
      if (carry.length < this.carryNeed) return true
      if (!isUtf8(Buffer.from(carry))) return false
      this.carry = undefined
      this.carryNeed = 0
    }
    let t = to
    for (let k = to - 1; k >= s && k >= to - 3; k--) {
      const c = b[k] as number
      if (c < 0x80) break
      if (c >= 0xc0) {
        const need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2
        if (to - k < need) {
          t = k
          this.carryNeed = need
          this.carry = [...b.subarray(k, to)]
        }
        break
      }
    }
    return isUtf8(b.subarray(s, t))
  }
}

// The names every answer has, read without decoding them: most messages have no other keys we keep.
const KNOWN_NAMES = ['id', 'jsonrpc', 'result', 'error', 'method', 'params', 'content', 'isError', 'structuredContent', '_meta', 'resultType']
const KNOWN_BY_LENGTH = new Map<number, string[]>()
for (const name of KNOWN_NAMES) KNOWN_BY_LENGTH.set(name.length, [...(KNOWN_BY_LENGTH.get(name.length) ?? []), name])

/** The known name that b[start, end) spells (ASCII, no escapes), else undefined. */
function knownName (b: Buffer, start: number, end: number): string | undefined {
  const candidates = KNOWN_BY_LENGTH.get(end - start)
  if (candidates === undefined) return undefined
  for (const name of candidates) {
    let k = 0
    while (k < name.length && name.charCodeAt(k) === b[start + k]) k++
    if (k === name.length) return name
  }
  return undefined
}

/** Scans one whole message (text is encoded as UTF-8 first); undefined when it is not a valid JSON object. */
export function scanMessage (message: string | Buffer): MessageScan | undefined {
  const bytes = typeof message === 'string' ? Buffer.from(message, 'utf8') : message
  // One scanner for every whole message: a scan is synchronous, and this one is never fed in pieces.
  wholeScanner.reset()
  return wholeScanner.push(bytes) ? wholeScanner.end() : undefined
}

const wholeScanner = new MessageScanner()
