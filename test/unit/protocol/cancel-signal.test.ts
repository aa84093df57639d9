import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { CallSignal, type CancelSignal } from '../../../src/protocol/cancel-signal.ts'

describe('CallSignal', () => {
  it('runs each listener once, in order, with the reason readable; abort twice changes nothing', () => {
    const signal = new CallSignal()
    const heard: string[] = []
    signal.addEventListener('abort', () => { heard.push(`a:${String(signal.reason)}`) })
    signal.addEventListener('abort', () => { heard.push('b') })
    assert.equal(signal.aborted, false)
    signal.abort('first')
    signal.abort('second')
    assert.equal(signal.aborted, true)
    assert.equal(signal.reason, 'first')
    assert.deepEqual(heard, ['a:first', 'b'])
  })

  it('does not run a removed listener, nor one added after the abort (as AbortSignal)', () => {
    const signal = new CallSignal()
    let removed = 0
    let late = 0
    const listener = (): void => { removed++ }
    signal.addEventListener('abort', listener)
    signal.removeEventListener('abort', listener)
    signal.removeEventListener('abort', () => {})
    signal.abort(new Error('cancelled'))
    signal.addEventListener('abort', () => { late++ })
    assert.equal(removed, 0)
    assert.equal(late, 0)
  })

  it('behaves like an AbortSignal wherever a CancelSignal is taken', () => {
    for (const make of [() => { const c = new AbortController(); return { signal: c.signal as CancelSignal, abort: (r: unknown) => { c.abort(r) } } }, () => { const s = new CallSignal(); return { signal: s as CancelSignal, abort: (r: unknown) => { s.abort(r) } } }]) {
      const { signal, abort } = make()
      const heard: unknown[] = []
      signal.addEventListener('abort', () => { heard.push(signal.reason) }, { once: true })
      abort('why')
      abort('again')
      assert.deepEqual(heard, ['why'])
      assert.equal(signal.aborted, true)
    }
  })
})
