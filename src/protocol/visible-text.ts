// Text from a client, an upstream or a token, made safe to show a person: every control, format
// (Cf: bidirectional controls, zero-width characters, tag characters, the BOM, soft hyphen) and
// line/paragraph separator character is written out as `\u{XXXX}`. A U+202E left raw would turn
// "evil" into "live" on the console, in a terminal or in an approval question, and reverse the
// rest of the line around it (Trojan Source, CVE-2021-42574).
//
// The console runs this same function in the browser: console-routes.ts serves its source as
// /console/visible-text.js, so the function stays self-contained (no import, no module constant).

export interface VisibleTextOptions {
  /** Keep line feeds and tabs as they are (for multi-line text such as pretty JSON); default false. */
  readonly multiline?: boolean
}

/** `text` with every invisible or control character shown as `\u{XXXX}` (hex, upper case). */
export function visibleText (text: string, options?: VisibleTextOptions): string {
  const keep = options?.multiline === true
  return String(text).replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => {
    if (keep && (c === '\n' || c === '\t')) return c
    return '\\u{' + (c.codePointAt(0) ?? 0).toString(16).toUpperCase() + '}'
  })
}
