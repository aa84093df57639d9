import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { LOG_LEVELS, isLogLevel, mostVerbose, passesLevel } from '../../../src/session/log-levels.ts'

describe('log levels (RFC 5424 order)', () => {
  it('knows exactly the eight MCP levels', () => {
    assert.deepEqual([...LOG_LEVELS], ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'])
    assert.equal(isLogLevel('warn'), false)
    assert.equal(isLogLevel(3), false)
  })

  it('passes messages at or above the threshold, and everything without one', () => {
    assert.equal(passesLevel('error', 'warning'), true)
    assert.equal(passesLevel('warning', 'warning'), true)
    assert.equal(passesLevel('info', 'warning'), false)
    assert.equal(passesLevel('debug', undefined), true)
    assert.equal(passesLevel('shouting', 'emergency'), true, 'a level we cannot rank is not hidden')
  })

  it('finds the most verbose threshold among clients', () => {
    assert.equal(mostVerbose(['error', undefined, 'info', 'warning']), 'info')
    assert.equal(mostVerbose([undefined]), undefined)
    assert.equal(mostVerbose([]), undefined)
  })
})
