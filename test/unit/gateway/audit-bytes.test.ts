import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { jsonBytes } from '../../../src/gateway/audit.ts'

describe('jsonBytes', () => {
  it('counts 0 for a result that cannot be written as JSON instead of throwing', () => {
    let deep: Record<string, unknown> = {}
    for (let i = 0; i < 20_000; i++) deep = { a: deep }
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    assert.equal(jsonBytes({ content: [], deep }), 0)
    assert.equal(jsonBytes(cyclic), 0)
  })
})
