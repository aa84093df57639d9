import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { ANONYMOUS, type Principal } from '../../../src/auth/principal.ts'
import type { JsonRpcRequest } from '../../../src/protocol/json-rpc.ts'
import { bindingOf, canonicalJson, paramsDigest, retryMismatch } from '../../../src/session/retry-binding.ts'

const ALICE: Principal = { id: 'alice', roles: ['dev'], via: 'api-key' }
const BOB: Principal = { id: 'bob', roles: [], via: 'api-key' }

const request = (params: Record<string, unknown>, method = 'tools/call'): JsonRpcRequest => ({ jsonrpc: '2.0', id: 1, method, params })

describe('canonicalJson', () => {
  it('is JSON of the same value, and the same text for a copy with every object\'s keys in reverse order', () => {
    const reversed = (v: unknown): unknown => Array.isArray(v)
      ? v.map(reversed)
      : typeof v === 'object' && v !== null ? Object.fromEntries(Object.keys(v).reverse().map(k => [k, reversed((v as Record<string, unknown>)[k])])) : v
    fc.assert(fc.property(fc.jsonValue(), (value) => {
      const text = canonicalJson(value)
      assert.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(value)))
      assert.equal(canonicalJson(reversed(value)), text)
    }), { numRuns: 300 })
  })

  it('gives the same text whatever the key order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 3 }], c: null } }), canonicalJson({ a: { c: null, d: [1, { x: 3, y: 2 }] }, b: 1 }))
    assert.equal(canonicalJson({ b: 1, a: 2 }), '{"a":2,"b":1}')
  })

  it('serializes a value nested 100,000 levels deep without overflowing the stack', () => {
    let deep: unknown = 'leaf'
    for (let i = 0; i < 100_000; i++) deep = i % 2 === 0 ? [deep] : { k: deep }
    const text = canonicalJson(deep)
    assert.ok(text.endsWith(']}]}'))
    assert.ok(text.includes('"leaf"'))
  })
})

describe('retryMismatch', () => {
  const original = request({ name: 'ask', arguments: { prompt: 'p', n: 1 }, _meta: { progressToken: 1 } })
  const bound = bindingOf(ALICE, original)

  it('admits the same request by the same principal, whatever its answers, requestState, _meta and key order', () => {
    const retry = request({ arguments: { n: 1, prompt: 'p' }, name: 'ask', inputResponses: { 1: {} }, requestState: 'v1.x', _meta: { progressToken: 2, other: true } })
    assert.equal(retryMismatch(bound, { ...ALICE, roles: [] }, retry), undefined)
  })

  it('refuses another principal, another method, another name, other arguments or an extra param', () => {
    assert.match(retryMismatch(bound, BOB, original) ?? '', /another principal/)
    assert.match(retryMismatch(bound, ANONYMOUS, original) ?? '', /another principal/)
    assert.match(retryMismatch(bound, { ...ALICE, via: 'jwt' }, original) ?? '', /another principal/)
    assert.match(retryMismatch(bound, ALICE, request(original.params ?? {}, 'prompts/get')) ?? '', /prompts\/get/)
    assert.match(retryMismatch(bound, ALICE, request({ name: 'other', arguments: { prompt: 'p', n: 1 } })) ?? '', /differ/)
    assert.match(retryMismatch(bound, ALICE, request({ name: 'ask', arguments: { prompt: 'p', n: 2 } })) ?? '', /differ/)
    assert.match(retryMismatch(bound, ALICE, request({ name: 'ask', arguments: { prompt: 'p', n: 1 }, task: { ttl: 1 } })) ?? '', /differ/)
    assert.match(retryMismatch(bound, ALICE, request({ name: 'ask' })) ?? '', /differ/)
  })

  it('digests a resources/read by its uri', () => {
    assert.notEqual(paramsDigest({ uri: 'file:///a' }), paramsDigest({ uri: 'file:///b' }))
    assert.equal(paramsDigest({ uri: 'file:///a', _meta: { x: 1 } }), paramsDigest({ uri: 'file:///a' }))
  })
})
