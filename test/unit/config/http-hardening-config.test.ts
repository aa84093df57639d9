import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { listenerTimeouts } from '../../../src/app.ts'
import { configIssues } from '../../helpers/config-issues.ts'

describe('http.maxJsonDepth, http.headersTimeoutMs and http.requestTimeoutMs', () => {
  it('default to a depth of 64, 10 s for headers and 30 s for a whole request', () => {
    const { http } = parseConfig('{}', {})
    assert.equal(http.maxJsonDepth, 64)
    assert.equal(http.headersTimeoutMs, 10_000)
    assert.equal(http.requestTimeoutMs, 30_000)
  })

  it('refuse a header timeout longer than the request timeout, and a depth too small to carry a message', () => {
    assert.deepEqual(configIssues(JSON.stringify({ http: { headersTimeoutMs: 5000, requestTimeoutMs: 4000 } })), ['http.headersTimeoutMs: must not exceed requestTimeoutMs (4000)'])
    assert.equal(configIssues(JSON.stringify({ http: { maxJsonDepth: 4 } })).length, 1)
    assert.deepEqual(configIssues(JSON.stringify({ http: { maxJsonDepth: 100_000, headersTimeoutMs: 4000, requestTimeoutMs: 4000 } })), [])
  })

  it('are checked by Node often enough to hold: at least every second, and four times per header timeout', () => {
    assert.deepEqual(listenerTimeouts({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 }), { headersTimeout: 10_000, requestTimeout: 30_000, connectionsCheckingInterval: 1_000 })
    assert.equal(listenerTimeouts({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 }).connectionsCheckingInterval, 250)
  })
})
