import { findAssignments, findFieldSecret, findTokens } from './secret-patterns.ts'

/** One secret in a string: its kind (a short stable label) and where it is, as UTF-16 offsets (end exclusive). */
export interface SecretMatch {
  readonly kind: string
  readonly start: number
  readonly end: number
}

/**
 * What the guardrails ask of a secret detector; the pattern list below is one, and a library
 * (secretlint, a port of gitleaks' rules) could be another behind the same two calls. Synchronous
 * on purpose: it runs on every string of every result, and a promise per string would cost more
 * than most scans.
 */
export interface SecretDetector {
  /** The secrets in a piece of free text (a text content item, a string in structured data, an argument). */
  find: (text: string) => SecretMatch[]
  /**
   * The secrets in a string that is the value of a named field of structured data (`{ "password":
   * "…" }` in structuredContent or in arguments): the field's name can say what the value is.
   */
  findInField: (key: string, value: string) => SecretMatch[]
}

/** Strings shorter than this hold no secret any pattern knows (`pwd=abcdef` is 10). */
const MIN_SCANNED_CHARS = 10

/**
 * The documented pattern list (secret-patterns.ts): AWS access key ids, GitHub and Slack tokens,
 * private-key PEM blocks, JWTs (whose header must decode to a JSON object naming an `alg`) and
 * `password=`-style assignments of a literal value.
 */
export function createPatternDetector (): SecretDetector {
  const find = (text: string): SecretMatch[] => {
    if (text.length < MIN_SCANNED_CHARS) return []
    const tokens = findTokens(text)
    const assignments = findAssignments(text)
    return assignments.length === 0 ? tokens : tokens.length === 0 ? assignments : withoutOverlaps([...tokens, ...assignments])
  }
  return {
    find,
    findInField (key, value) {
      const inside = find(value)
      if (inside.length > 0) return inside
      const whole = findFieldSecret(key, value)
      return whole === undefined ? [] : [whole]
    }
  }
}

/** Sorted by start; of two that overlap, the first (the longer, when they start together) wins. */
function withoutOverlaps (matches: SecretMatch[]): SecretMatch[] {
  matches.sort((a, b) => a.start - b.start || b.end - a.end)
  const kept: SecretMatch[] = []
  let end = -1
  for (const m of matches) {
    if (m.start < end) continue
    kept.push(m)
    end = m.end
  }
  return kept
}

/** `text` with each match replaced by `[redacted:<kind>]`; matches must not overlap. */
export function redactMatches (text: string, matches: readonly SecretMatch[]): string {
  const sorted = [...matches].sort((a, b) => a.start - b.start)
  let out = ''
  let at = 0
  for (const m of sorted) {
    if (m.start < at) continue
    out += text.slice(at, m.start) + `[redacted:${m.kind}]`
    at = m.end
  }
  return out + text.slice(at)
}
