import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createReloadable } from '../../../src/config/reloadable.ts'

class Resource {
  closed = 0
  readonly name: string
  constructor (name: string) { this.name = name }
  close (): void { this.closed++ }
}

describe('Reloadable', () => {
  it('current() is the initial value until replace() puts the next one in force', () => {
    const value = createReloadable({ pageSize: 50 })
    assert.deepEqual(value.current(), { pageSize: 50 })
    value.replace({ pageSize: 10 })
    assert.deepEqual(value.current(), { pageSize: 10 })
  })

  it('closes the value it replaced, once, and never the one in force', () => {
    const first = new Resource('first')
    const second = new Resource('second')
    const value = createReloadable(first)
    value.replace(second)
    assert.equal(value.current(), second)
    assert.equal(first.closed, 1)
    assert.equal(second.closed, 0)
    value.replace(second)
    assert.equal(second.closed, 0, 'replacing a value with itself closes nothing')
  })

  it('leaves values without close() alone: plain objects, functions, undefined', () => {
    const value = createReloadable<(() => void) | undefined>(() => {})
    value.replace(undefined)
    value.replace(() => {})
    assert.equal(typeof value.current(), 'function')
  })

  it('hands a close that rejects to onCloseError; the new value is in force either way', async () => {
    const failures: unknown[] = []
    let reported!: () => void
    const seen = new Promise<void>(resolve => { reported = resolve })
    const value = createReloadable<{ close: () => Promise<void> }>({ close: async () => { throw new Error('redis gone') } }, { onCloseError: (err) => { failures.push(err); reported() } })
    const next = { close: async () => {} }
    value.replace(next)
    assert.equal(value.current(), next)
    await seen
    assert.equal((failures[0] as Error).message, 'redis gone')
  })

  it('hands a close that throws to onCloseError, and throws from replace() without one', () => {
    const failures: unknown[] = []
    const throwing = (): { close: () => void } => ({ close: () => { throw new Error('cannot close') } })
    const reported = createReloadable(throwing(), { onCloseError: (err) => { failures.push(err) } })
    reported.replace(throwing())
    assert.equal(failures.length, 1)
    const unreported = createReloadable(throwing())
    const next = throwing()
    assert.throws(() => { unreported.replace(next) }, /cannot close/)
    assert.equal(unreported.current(), next, 'the swap happened before the close failed')
  })
})
