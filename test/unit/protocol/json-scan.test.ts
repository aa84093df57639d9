import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { scanMessage } from '../../../src/protocol/json-scan.ts'

function parses (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Whitespace JSON allows, put between tokens of a compact text (never inside a string). */
function spaced (text: string, gaps: string[]): string {
  let out = ''
  let inString = false
  let g = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    out += c
    if (inString) {
      if (c === '\\') out += text[++i] as string
      else if (c === '"') inString = false
    } else if (c === '"') {
      inString = true
    }
    if (!inString && (c === ',' || c === ':' || c === '{' || c === '[')) out += gaps[g++ % gaps.length] ?? ''
  }
  return out
}

describe('scanMessage', () => {
  it('finds every top-level member and every member of result where JSON.parse puts them', () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.dictionary(fc.string(), fc.jsonValue()), fc.array(fc.constantFrom('', ' ', '\t', '  ')), (outer, result, gaps) => {
      const text = spaced(JSON.stringify({ ...outer, result }), gaps)
      const scan = scanMessage(text)
      assert.ok(scan !== undefined)
      const parsed = JSON.parse(text) as Record<string, unknown>
      assert.deepEqual([...scan.members.keys()].sort(), Object.keys(parsed).sort())
      for (const [key, span] of scan.members) assert.deepEqual(JSON.parse(text.slice(span.start, span.end)), parsed[key])
      const inner = parsed.result as Record<string, unknown>
      assert.deepEqual([...(scan.resultMembers?.keys() ?? [])].sort(), Object.keys(inner).sort())
      for (const [key, span] of scan.resultMembers ?? []) assert.deepEqual(JSON.parse(text.slice(span.start, span.end)), inner[key])
      assert.equal(scan.lineBreaks, false)
    }), { numRuns: 300 })
  })

  it('accepts exactly the texts JSON.parse accepts as an object, whatever is changed in them', () => {
    const base = fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 })).map(v => JSON.stringify({ jsonrpc: '2.0', id: 1, result: v }))
    const edit = fc.tuple(base, fc.nat(), fc.nat({ max: 3 }), fc.constantFrom('', ',', ']', '}', '{', '[', '"', '\\', ':', '0', '-', '.', 'e', 'tru', 'n', ' ', '\n', '\u0001', '\\u12', '\\x'))
      .map(([text, at, cut, insert]) => { const i = at % (text.length + 1); return text.slice(0, i) + insert + text.slice(i + cut) })
    fc.assert(fc.property(fc.oneof(edit, fc.string(), fc.json()), (text) => {
      const expected = parses(text)
      const scan = scanMessage(text)
      assert.equal(scan !== undefined, isObject(expected), text)
    }), { numRuns: 3000 })
  })

  it('reads numbers, literals, escapes and repeated names as JSON.parse does', () => {
    const text = '{"a":-0.5e+3,"b":[true,false,null],"c":"\\u00e9\\"\\\\\\/\\b\\f\\n\\r\\t","a":0,"result":{"x":1,"\\u0078":2},"result":{"y":{}}}'
    const scan = scanMessage(text)
    assert.ok(scan !== undefined)
    assert.equal(text.slice(scan.members.get('a')?.start, scan.members.get('a')?.end), '0')
    assert.deepEqual([...(scan.resultMembers?.keys() ?? [])], ['y'])
    for (const bad of ['{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":1e}', '{"a":-}', '{"a":"\\u12g4"}', '{"a":"\t"}', '{"a":1,}', '{"a" 1}', '{"a":1}x', '[1]', '{"a":tru}', '{a:1}']) {
      assert.equal(scanMessage(bad), undefined, bad)
    }
  })

  it('says when a line break stands between tokens, and scans nesting deeper than any stack', () => {
    assert.equal(scanMessage('{"result":\n{}}')?.lineBreaks, true)
    assert.equal(scanMessage('{"result":{"a":"\\n"}}')?.lineBreaks, false)
    const deep = '{"result":{"a":' + '['.repeat(200_000) + ']'.repeat(200_000) + '}}'
    assert.equal(scanMessage(deep)?.resultMembers?.has('a'), true)
  })
})
