// How deeply a JSON text nests, found by one linear pass over the text before anything parses it
// or walks it: recursion anywhere downstream (JSON.stringify, a log serializer, a schema check)
// then never meets a value deeper than the edge allowed.

export const DEFAULT_MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d

/**
 * Whether `text` opens more than `maxDepth` objects and arrays inside one another (the top-level
 * object is depth 1). Brackets inside strings, escaped quotes included, do not count. Iterative and
 * allocation-free; it stops at the first level too deep. It does not validate the JSON: the parser
 * that runs afterwards does.
 */
export function exceedsJsonDepth (text: string, maxDepth: number): boolean {
  // A text shorter than the limit cannot open more levels than it has characters.
  if (text.length <= maxDepth) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) {
      inString = true
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return true
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--
    }
  }
  return false
}

/** The refusal's text, the same on every transport. */
export function tooDeepMessage (maxDepth: number): string {
  return `Invalid Request: the message nests objects and arrays more than ${maxDepth} levels deep (http.maxJsonDepth)`
}
