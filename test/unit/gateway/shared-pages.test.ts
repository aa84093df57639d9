import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { rpcResult } from '../../../src/protocol/json-rpc.ts'
import { messageJson } from '../../../src/protocol/wire.ts'
import { SharedPages } from '../../../src/gateway/shared-pages.ts'

describe('SharedPages', () => {
  it('builds a page once per catalog version, page size and cursor', () => {
    const pages = new SharedPages()
    const v1 = {}
    let builds = 0
    const build = (n: number) => () => { builds++; return { tools: [{ name: `t${n}` }] } }
    const first = pages.page(v1, 500, undefined, build(1))
    assert.equal(pages.page(v1, 500, undefined, build(99)), first, 'the same version and cursor share the page')
    assert.equal(builds, 1)
    assert.notEqual(pages.page(v1, 500, 'c1', build(2)), first, 'another cursor is another page')
    assert.notEqual(pages.page(v1, 100, undefined, build(3)), first, 'another page size (a reload) is another page')
    const v2 = {}
    const next = pages.page(v2, 500, undefined, build(4))
    assert.deepEqual(next, { tools: [{ name: 't4' }] }, 'a new catalog version is built afresh')
    assert.equal(builds, 4)
    assert.equal(messageJson(rpcResult(3, next)), '{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"t4"}]}}')
  })

  it('keeps a bounded number of pages per version, dropping the oldest', () => {
    const pages = new SharedPages()
    const version = {}
    let builds = 0
    const build = () => { builds++; return { tools: [] } }
    for (let i = 0; i < 40; i++) pages.page(version, 500, `c${i}`, build)
    assert.equal(builds, 40)
    pages.page(version, 500, 'c39', build)
    assert.equal(builds, 40, 'a recent page is kept')
    pages.page(version, 500, 'c0', build)
    assert.equal(builds, 41, 'the oldest was dropped and is built again')
  })

  it('does not keep a page whose building failed (a bad cursor)', () => {
    const pages = new SharedPages()
    const version = {}
    assert.throws(() => pages.page(version, 500, 'bad', () => { throw new RangeError('Invalid cursor') }), /Invalid cursor/)
    assert.deepEqual(pages.page(version, 500, 'bad', () => ({ tools: ['ok'] })), { tools: ['ok'] })
  })
})
