import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { MessageScanner, scanMessage, type MessageScan } from '../../../src/protocol/json-scan.ts'

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
    fc.assert(fc.property(fc.dictionary(fc.string({ unit: 'grapheme' }), fc.jsonValue()), fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue()), fc.array(fc.constantFrom('', ' ', '\t', '  ')), (outer, result, gaps) => {
      const text = spaced(JSON.stringify({ ...outer, result }), gaps)
      const scan = scanMessage(text)
      assert.ok(scan !== undefined)
      const parsed = JSON.parse(text) as Record<string, unknown>
      assert.deepEqual([...scan.members.keys()].sort(), Object.keys(parsed).sort())
      const bytes = Buffer.from(text)
      for (const [key, span] of scan.members) assert.deepEqual(JSON.parse(bytes.toString('utf8', span.start, span.end)), parsed[key])
      const inner = parsed.result as Record<string, unknown>
      assert.deepEqual([...(scan.resultMembers?.keys() ?? [])].sort(), Object.keys(inner).sort())
      for (const [key, span] of scan.resultMembers ?? []) assert.deepEqual(JSON.parse(bytes.toString('utf8', span.start, span.end)), inner[key])
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
    assert.equal(scanMessage('{"result":{\n}}')?.lineBreaks, true)
    assert.equal(scanMessage('{"id":\n1,"result":{"a":1}\r\n}')?.lineBreaks, false, 'only the result is relayed')
    assert.equal(scanMessage('{"result":{"a":"\\n"}}')?.lineBreaks, false)
    const deep = '{"result":{"a":' + '['.repeat(200_000) + ']'.repeat(200_000) + '}}'
    assert.equal(scanMessage(deep)?.resultMembers?.has('a'), true)
  })
})

/** Scans `bytes` pushed in the pieces that `cuts` make. */
function scanInPieces (bytes: Buffer, cuts: number[]): MessageScan | undefined {
  const scanner = new MessageScanner()
  let from = 0
  for (const cut of [...cuts.map(c => c % (bytes.length + 1)).sort((a, b) => a - b), bytes.length]) {
    if (!scanner.push(bytes, from, cut)) return undefined
    from = cut
  }
  return scanner.end()
}

describe('MessageScanner, fed in pieces', () => {
  it('finds the same members wherever the bytes are cut, inside escapes, numbers, literals, names and multi-byte characters', () => {
    const message = fc.record({ id: fc.oneof(fc.integer(), fc.string({ unit: 'binary' })), result: fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }), fc.jsonValue({ maxDepth: 2 })) })
    fc.assert(fc.property(message, fc.array(fc.nat(), { maxLength: 6 }), fc.boolean(), (value, cuts, escape) => {
      let json = JSON.stringify({ jsonrpc: '2.0', ...value })
      if (escape) json = json.replace(/[\u007f-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
      const bytes = Buffer.from(json)
      const whole = scanMessage(bytes)
      assert.ok(whole !== undefined)
      assert.deepEqual(scanInPieces(bytes, cuts), whole)
      for (let cut = 0; cut <= bytes.length; cut++) assert.deepEqual(scanInPieces(bytes, [cut]), whole)
    }), { numRuns: 150 })
  })

  it('refuses invalid UTF-8, also when the bad sequence is cut, as decoding would have replaced it', () => {
    const bad = [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]
    for (const seq of bad) {
      const bytes = Buffer.concat([Buffer.from('{"result":{"t":"a'), Buffer.from(seq), Buffer.from('b"}}')])
      assert.equal(scanMessage(bytes), undefined, String(seq))
      for (let cut = 0; cut <= bytes.length; cut++) assert.equal(scanInPieces(bytes, [cut]), undefined, `${String(seq)} cut at ${cut}`)
    }
    const truncatedAtEnd = Buffer.concat([Buffer.from('{"result":{}}'), Buffer.from([0xe2, 0x82])])
    assert.equal(scanMessage(truncatedAtEnd), undefined)
    const good = Buffer.from('{"result":{"t":"é😀日"}}')
    for (let cut = 0; cut <= good.length; cut++) assert.ok(scanInPieces(good, [cut]) !== undefined)
  })
})
