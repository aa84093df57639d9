import { codePoint } from './finding.ts'

// invisible_unicode: characters a person reviewing a definition cannot see but a model reads —
// bidirectional controls (Trojan Source, CVE-2021-42574), zero-width characters, Unicode tag
// characters (ASCII smuggled invisibly, U+E0000–E007F) and other format characters (Cf), plus
// runs of variation selectors (bytes smuggled behind one visible character).

/** Bidirectional embeddings, overrides and isolates, LRM/RLM and the Arabic letter mark. */
const BIDI = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/u
/** Format characters that are visible or belong to a script's ordinary writing, never flagged. */
const VISIBLE_FORMAT = /[\u0600-\u0605\u06DD\u070F\u0890\u0891\u08E2\u{110BD}\u{110CD}\u{13430}-\u{1343F}]/u
const JOINERS = /[\u200C\u200D]/u
const TAG = /[\u{E0000}-\u{E007F}]/u
/** Letters and marks of scripts that need ZWJ/ZWNJ (Arabic, Persian, Indic, ...); not Latin, Greek, Cyrillic. */
const JOINING_SCRIPT = /[\p{L}\p{M}]/u
const LATINISH = /[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}\p{Script=Common}]/u
const EMOJI = /[\p{Extended_Pictographic}\p{Emoji_Modifier}\uFE0F\u20E3]/u
/** A subdivision flag: 🏴 then tag letters, then CANCEL TAG (🏴󠁧󠁢󠁳󠁣󠁴󠁿). */
const FLAG_TAG_SEQUENCE = /\u{1F3F4}[\u{E0030}-\u{E0039}\u{E0061}-\u{E007A}]{2,7}\u{E007F}/gu
const VARIATION_SELECTOR = /[\uFE00-\uFE0F\u{E0100}-\u{E01EF}]/u

export interface InvisibleHit { readonly index: number, readonly char: string, readonly kind: string }

function joinerIsLegitimate (chars: readonly string[], i: number): boolean {
  const before = chars[i - 1]
  const after = chars[i + 1]
  if (before === undefined || after === undefined) return false
  // ZWJ inside an emoji sequence (👩‍💻), or ZWJ/ZWNJ between letters of a script that needs them.
  if (chars[i] === '\u200D' && EMOJI.test(before) && EMOJI.test(after)) return true
  return JOINING_SCRIPT.test(before) && JOINING_SCRIPT.test(after) && !LATINISH.test(before) && !LATINISH.test(after)
}

/** The first invisible character of `text` that is not part of legitimate writing, if any. */
export function findInvisible (text: string): InvisibleHit | undefined {
  // Subdivision flags are the one legitimate use of tag characters: blank them out first.
  const chars = [...text.replace(FLAG_TAG_SEQUENCE, m => '\u{1F3F4}'.padEnd(m.length, ' '))]
  let index = 0
  for (let i = 0; i < chars.length; i++) {
    const char = chars[i] as string
    const at = index
    index += char.length
    if (BIDI.test(char)) return { index: at, char, kind: 'bidirectional control' }
    if (TAG.test(char)) return { index: at, char, kind: 'Unicode tag character' }
    if (JOINERS.test(char)) {
      if (joinerIsLegitimate(chars, i)) continue
      return { index: at, char, kind: 'zero-width character' }
    }
    if (VARIATION_SELECTOR.test(char)) {
      // One selector after a visible character picks its presentation (❤️); two or more in a row carry data.
      if (i > 0 && VARIATION_SELECTOR.test(chars[i - 1] as string)) return { index: at, char, kind: 'run of variation selectors' }
      continue
    }
    if (/\p{Cf}/u.test(char) && !VISIBLE_FORMAT.test(char)) return { index: at, char, kind: char === '\u200B' || char === '\uFEFF' || char === '\u2060' ? 'zero-width character' : 'invisible format character' }
  }
  return undefined
}

export function describeInvisible (hit: InvisibleHit): string {
  return `${hit.kind} ${codePoint(hit.char)} at character ${hit.index}`
}
