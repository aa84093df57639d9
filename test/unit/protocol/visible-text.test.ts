import { test } from 'node:test'
import assert from 'node:assert/strict'
import { visibleText } from '../../../src/protocol/visible-text.ts'

const hex = (c: string): string => (c.codePointAt(0) ?? 0).toString(16).toUpperCase()

test('shows every bidirectional control escaped: embeddings, overrides, isolates, LRM/RLM and the Arabic letter mark', () => {
  const bidi = ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069', '\u200E', '\u200F', '\u061C']
  for (const c of bidi) assert.equal(visibleText(`a${c}b`), `a\\u{${hex(c)}}b`)
})

test('turns "evil" spoofed as "live" back into readable text', () => {
  assert.equal(visibleText('\u202Elive'), '\\u{202E}live')
  assert.equal(visibleText('client \u2067evil\u2069 v1'), 'client \\u{2067}evil\\u{2069} v1')
})

test('shows zero-width characters, the BOM, the soft hyphen, word joiner and tag characters escaped', () => {
  for (const c of ['\u200B', '\u200C', '\u200D', '\uFEFF', '\u00AD', '\u2060', '\u{E0041}', '\u{E007F}']) {
    assert.equal(visibleText(`x${c}y`), `x\\u{${hex(c)}}y`)
  }
})

test('shows C0 and C1 controls, DEL and the line and paragraph separators escaped, line feed and tab too by default', () => {
  assert.equal(visibleText('a\u0000b\u0007c\u001Bd\u007Fe\u0085f\u009Bg'), 'a\\u{0}b\\u{7}c\\u{1B}d\\u{7F}e\\u{85}f\\u{9B}g')
  assert.equal(visibleText('a\u2028b\u2029c'), 'a\\u{2028}b\\u{2029}c')
  assert.equal(visibleText('a\nb\tc\rd'), 'a\\u{A}b\\u{9}c\\u{D}d')
})

test('keeps line feeds and tabs when asked to (multi-line text), never a carriage return or an escape', () => {
  assert.equal(visibleText('{\n\t"a": "\u001B[2J\r"\n}', { multiline: true }), '{\n\t"a": "\\u{1B}[2J\\u{D}"\n}')
})

test('leaves visible text alone: letters of every script, emoji, punctuation and spaces', () => {
  for (const text of ['alice@example.com', 'Ünïcödé', 'שלום עולם', 'مرحبا', '日本語', '🙂 ok', 'a b\u00A0c', '']) assert.equal(visibleText(text), text)
})
