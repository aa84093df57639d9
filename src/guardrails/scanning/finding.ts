// What the tool-definition scan reports. Pure data, shared by the rules, the scanner and the pin book.

export const SCAN_RULES = ['invisible_unicode', 'hidden_instructions', 'shadowing', 'foreign_host', 'oversized'] as const
export type ScanRule = typeof SCAN_RULES[number]

export interface Finding {
  readonly rule: ScanRule
  /** Where in the definition, as a JSON path: `description`, `inputSchema.properties.path.description`, `inputSchema.properties.mode.enum[2]`. */
  readonly path: string
  /** For the operator: what was found, with at most a short, escaped excerpt (never the whole text). */
  readonly reason: string
}

/** How many characters of the matched text a reason quotes. */
export const MAX_EXCERPT_CHARS = 60

/**
 * A short quote of matched text for a reason: invisible and control characters spelled as U+XXXX
 * (so a log line or terminal never carries them), cut at MAX_EXCERPT_CHARS.
 */
export function excerpt (text: string): string {
  const chars = [...text]
  const cut = chars.length > MAX_EXCERPT_CHARS ? chars.slice(0, MAX_EXCERPT_CHARS) : chars
  const shown = cut.map(c => /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(c) ? codePoint(c) : c).join('')
  return JSON.stringify(shown + (cut.length < chars.length ? '…' : ''))
}

export function codePoint (char: string): string {
  return `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
}
