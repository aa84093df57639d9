import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { boundForLog, truncateString } from '../../../src/observability/log-bounds.ts'
import { createLogger } from '../../../src/observability/logger.ts'

describe('log bounds', () => {
  it('cuts a long string and says how much was cut', () => {
    assert.equal(truncateString('abcdef', 4), 'abcd…[truncated 2 chars]')
    assert.equal(truncateString('abcd', 4), 'abcd')
  })

  it('returns a value within bounds as the same object, without copying', () => {
    const value = { a: 'short', b: [1, 2, { c: 'x' }] }
    assert.equal(boundForLog(value, 10), value)
  })

  it('cuts strings at any depth, in keys too, without touching the original', () => {
    const long = 'x'.repeat(50)
    const value = { keep: 1, deep: { list: ['ok', long] }, [long]: 2 }
    const bounded = boundForLog(value, 10) as { keep: number, deep: { list: string[] } }
    assert.deepEqual(bounded.deep.list, ['ok', 'xxxxxxxxxx…[truncated 40 chars]'])
    assert.equal(bounded.keep, 1)
    assert.ok(Object.keys(bounded).includes('xxxxxxxxxx…[truncated 40 chars]'))
    assert.equal(value.deep.list[1], long)
  })

  it('cuts deep nesting and long arrays', () => {
    let deep: unknown = 'bottom'
    for (let i = 0; i < 50; i++) deep = { d: deep }
    assert.match(JSON.stringify(boundForLog(deep, 100)), /truncated: object nested/)
    const many = boundForLog(Array.from({ length: 1000 }, (_, i) => i), 100) as unknown[]
    assert.equal(many.length, 201)
    assert.equal(many.at(-1), '[truncated 800 items]')
  })

  it('keeps every line of a logger under the bound: fields, message, child bindings and errors', () => {
    const lines: string[] = []
    const log = createLogger('info', { write (line: string) { lines.push(line) } }, { maxStringChars: 100 })
    const huge = 'y'.repeat(1_000_000)
    log.child({ client: huge }).info({ name: huge, err: new Error(huge) }, huge)
    assert.equal(lines.length, 1)
    const line = lines[0] ?? ''
    assert.ok(line.length < 4000, `a line of ${line.length} characters`)
    assert.match(line, /…\[truncated 999900 chars\]/)
  })
})
