import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { rpcResult } from '../../../src/protocol/json-rpc.ts'
import { rawJsonOf, rawWith } from '../../../src/protocol/raw-result.ts'
import { bodyBytes, messageBody, messageJson } from '../../../src/protocol/wire.ts'
import { jsonBytes } from '../../../src/gateway/audit.ts'
import { JsonLineReader } from '../../../src/upstream/json-line-reader.ts'
import { rawAnswer, type RawMessage } from '../../../src/protocol/raw-answer.ts'

/** Results of every content type, with structuredContent, _meta, escapes and multi-byte text, as an upstream might write them. */
const RESULTS = [
  '{"content":[{"type":"text","text":"hello"}]}',
  '{"content":[{"type":"text","text":"\\u00e9t\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t"}],"isError":false}',
  '{"content":[{"type":"text","text":"été 😀 日本語 \u2028\u2029"}]}',
  '{ "content" : [ { "type" : "image", "data" : "iVBORw0KGgo=", "mimeType" : "image/png" } ] , "isError" : true }',
  '{"content":[{"type":"audio","data":"UklGRg==","mimeType":"audio/wav"},{"type":"resource_link","uri":"file:///a","name":"a"},{"type":"resource","resource":{"uri":"x://y","text":"t","mimeType":"text/plain"}}]}',
  '{"content":[],"structuredContent":{"n":1.50,"big":12345678901234567890,"e":1E+2,"nested":{"a":[null,true,false]}},"_meta":{"k":"v","io.example/x":[1]}}',
  '{"resultType":"complete","content":[{"type":"text","text":"' + 'x'.repeat(1000) + '"}],"__proto__":{"polluted":true}}'
]

/** Client ids of every type: small and large integers, negative, fractional, strings with quotes and Unicode. */
const IDS = [0, 1, -7, 2 ** 53 - 1, Number('9007199254740993'), 1.5, 'abc', '', 'with "quotes" \\ and \n', 'ünï©ødé 😀', '\u2028']

describe('rawAnswer', () => {
  it('reads the id and keeps the result as the upstream wrote it, byte for byte', () => {
    for (const result of RESULTS) {
      for (const upstreamId of [1, 42, 'up-1']) {
        const line = `{"jsonrpc":"2.0","id":${JSON.stringify(upstreamId)},"result":${result}}`
        const answer = rawAnswer(line)
        assert.ok(answer !== undefined, line)
        assert.equal(answer.id, upstreamId)
        assert.equal(rawJsonOf(answer.result), result)
        assert.equal(jsonBytes(answer.result), Buffer.byteLength(result))
      }
    }
  })

  it('splices every kind of client id into the result it relays', () => {
    for (const result of RESULTS) {
      const answer = rawAnswer(`{"result":${result},"id":3,"jsonrpc":"2.0"}`)
      assert.ok(answer !== undefined)
      for (const id of IDS) {
        const text = messageJson(rpcResult(id, answer.result))
        assert.equal(text, `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`)
        assert.deepEqual(JSON.parse(text), { jsonrpc: '2.0', id, result: JSON.parse(result) })
      }
    }
  })

  it('is, to every reader, the object JSON.parse gives, and frozen', () => {
    for (const result of RESULTS) {
      const answer = rawAnswer(`{"jsonrpc":"2.0","id":1,"result":${result}}`)
      assert.ok(answer !== undefined)
      const parsed = JSON.parse(result) as Record<string, unknown>
      assert.deepEqual(answer.result, parsed)
      assert.deepEqual(Object.keys(answer.result), Object.keys(parsed))
      assert.deepEqual(JSON.parse(JSON.stringify(answer.result)), parsed)
      assert.deepEqual({ ...answer.result }, parsed)
      assert.ok(Object.isFrozen(answer.result))
      assert.throws(() => { (answer.result as Record<string, unknown>).extra = 1 }, TypeError)
    }
  })

  it('keeps its text while only scalars and strings were read; once a nested value was handed out, it is serialized again', () => {
    const result = '{"content":[{"type":"text","text":"secret"}],"isError":false,"resultType":"complete","note":"' + 'n'.repeat(300) + '"}'
    const answer = rawAnswer(`{"jsonrpc":"2.0","id":1,"result":${result}}`)
    assert.ok(answer !== undefined)
    assert.equal(answer.result.isError, false)
    assert.equal(answer.result.resultType, 'complete')
    assert.equal((answer.result.note as string).length, 300)
    assert.equal(rawJsonOf(answer.result), result)
    const content = answer.result.content as Array<{ text: string }>
    assert.equal(rawJsonOf(answer.result), undefined)
    // What a step changed in place is what the client gets.
    ;(content[0] as { text: string }).text = '[redacted]'
    assert.match(messageJson(rpcResult(5, answer.result)), /\[redacted\]/)
    // A copy made by spreading is a plain object: the text does not travel with it.
    const other = rawAnswer(`{"jsonrpc":"2.0","id":1,"result":${result}}`)
    assert.ok(other !== undefined)
    const copy = { ...other.result, isError: true }
    assert.equal(rawJsonOf(copy), undefined)
    assert.equal(JSON.parse(messageJson(rpcResult(1, copy))).result.isError, true)
  })

  it('writes a large relayed result as the pieces it arrived in, holding exactly the bytes of its JSON text, with what goes before and after', () => {
    const result = '{"content":[{"type":"text","text":"' + 'é😀x\\u00e9'.repeat(20_000) + '"}]}'
    const answer = rawAnswer(`{"jsonrpc":"2.0","id":1,"result":${result}}`)
    assert.ok(answer !== undefined)
    for (const id of IDS) {
      const body = messageBody(rpcResult(id, answer.result), 'data: ', '\n\n')
      assert.ok(Array.isArray(body))
      assert.equal(bodyBytes(body), Buffer.concat(body).length)
      assert.equal(Buffer.concat(body).toString('utf8'), `data: {"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}\n\n`)
    }
    // A small one stays text.
    const small = rawAnswer('{"jsonrpc":"2.0","id":1,"result":{"content":[]}}')
    assert.equal(messageBody(rpcResult(2, small?.result ?? {})), '{"jsonrpc":"2.0","id":2,"result":{"content":[]}}')
  })

  it('leaves to the ordinary parse whatever is not an answer with an object result', () => {
    for (const line of [
      '{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}',
      '{"jsonrpc":"2.0","id":1,"method":"x","result":{}}',
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}',
      '{"jsonrpc":"1.0","id":1,"result":{}}',
      '{"jsonrpc":"2.0","id":null,"result":{}}',
      '{"jsonrpc":"2.0","id":{},"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":[]}',
      '{"jsonrpc":"2.0","id":1,"result":{},"result":5}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":[1,]}}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":1}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":\r1}}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":{"code":-1,"message":"both"}}',
      '{"jsonrpc":"2.0","result":{}}'
    ]) assert.equal(rawAnswer(line), undefined, line)
  })

  it('relays a result split across stdio chunks at any byte position byte for byte', () => {
    const text = fc.string({ unit: 'binary', maxLength: 40 })
    const result = fc.record({
      content: fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 3 }),
      structuredContent: fc.option(fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 5 }), fc.jsonValue({ maxDepth: 2 })), { nil: undefined }),
      _meta: fc.option(fc.dictionary(fc.string({ maxLength: 5 }), text), { nil: undefined })
    }, { requiredKeys: ['content'] })
    fc.assert(fc.property(result, fc.boolean(), (value, escape) => {
      // Written either as JSON.stringify does, or with every non-ASCII character escaped, as some servers do.
      let json = JSON.stringify(value)
      if (escape) json = json.replace(/[\u007f-\uffff]/g, c => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
      const bytes = Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${json}}\n`)
      for (let cut = 0; cut <= bytes.length; cut++) {
        // As the stdio transport reads: bytes, then lines of pieces.
        const lines = new JsonLineReader(1 << 20)
        const seen: RawMessage[] = []
        for (const chunk of [bytes.subarray(0, cut), bytes.subarray(cut)]) lines.push(chunk, line => seen.push(line))
        assert.equal(seen.length, 1)
        const answer = rawAnswer(seen[0] as RawMessage)
        assert.ok(answer !== undefined)
        assert.equal(Buffer.from(messageJson(rpcResult(7, answer.result))).equals(bytes.subarray(0, bytes.length - 1)), true)
      }
    }), { numRuns: 60 })
  })
  it('sets members beside the others\' bytes (rawWith), and refuses once a member it keeps was handed out', () => {
    const answer = rawAnswer('{"jsonrpc":"2.0","id":1,"result":{ "content" : [ ], "n": 1.0, "_meta": {"a": -0} }}')
    assert.ok(answer !== undefined)
    const meta = answer.result._meta as Record<string, unknown>
    const stamped = rawWith(answer.result, { resultType: 'complete', _meta: { ...meta, s: 1 } })
    assert.ok(stamped !== undefined)
    assert.equal(rawJsonOf(stamped), '{"content" : [ ],"n": 1.0,"resultType":"complete","_meta":{"a":0,"s":1}}')
    assert.deepEqual(stamped, { content: [], n: 1, resultType: 'complete', _meta: { a: 0, s: 1 } })
    void answer.result.content
    assert.equal(rawWith(answer.result, { resultType: 'complete' }), undefined)
    assert.equal(rawWith({ plain: true }, { resultType: 'complete' }), undefined)
  })
})
