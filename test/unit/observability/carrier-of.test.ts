import { test } from 'node:test'
import assert from 'node:assert/strict'
import { carrierOf } from '../../../src/observability/tracing.ts'

const VALID = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

test('carrierOf keeps a W3C traceparent and a printable tracestate', () => {
  assert.deepEqual(carrierOf({ traceparent: VALID, tracestate: 'a=1,b=2' }), { traceparent: VALID, tracestate: 'a=1,b=2' })
  assert.deepEqual(carrierOf({ traceparent: VALID }), { traceparent: VALID })
})

test('carrierOf ignores a traceparent no header may carry or the spec calls invalid, and an odd tracestate', () => {
  for (const traceparent of ['bad\nvalue', '€uro', VALID.toUpperCase(), `${VALID}\r`, `ff${VALID.slice(2)}`, `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01`, '', 5]) {
    assert.equal(carrierOf({ traceparent }), undefined, JSON.stringify(traceparent))
  }
  for (const tracestate of ['a=1\nb=2', 'é=1', 'x'.repeat(513), ' a=1']) {
    assert.deepEqual(carrierOf({ traceparent: VALID, tracestate }), { traceparent: VALID }, JSON.stringify(tracestate))
  }
})
