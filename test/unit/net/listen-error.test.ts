import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { describeListenError } from '../../../src/net/listen-error.ts'

function systemError (code: string, syscall = 'listen'): Error {
  return Object.assign(new Error(`${syscall} ${code}: something 0.0.0.0:80`), { code, syscall })
}

const MCP = { host: '0.0.0.0', port: 80, setting: 'listen' }

describe('describeListenError', () => {
  it('explains each bind failure a config can cause and names the setting to change', () => {
    assert.equal(describeListenError(systemError('EADDRINUSE'), MCP), 'cannot listen on 0.0.0.0:80: address already in use (another switchboard? set listen.port)')
    assert.equal(describeListenError(systemError('EACCES'), MCP), 'cannot listen on 0.0.0.0:80: permission denied (ports below 1024 need privileges; set listen.port)')
    assert.equal(describeListenError(systemError('EADDRNOTAVAIL'), { host: '10.9.9.9', port: 8081, setting: 'admin.listen' }),
      'cannot listen on 10.9.9.9:8081: address not available (no interface of this machine has 10.9.9.9; set admin.listen.host)')
    assert.equal(describeListenError(systemError('ENOTFOUND', 'getaddrinfo'), { host: 'gw.invalid', port: 8080, setting: 'listen' }),
      'cannot listen on gw.invalid:8080: gw.invalid does not resolve to an address (set listen.host)')
  })

  it('brackets an IPv6 host', () => {
    assert.equal(describeListenError(systemError('EADDRINUSE'), { host: '::1', port: 8080, setting: 'listen' }),
      'cannot listen on [::1]:8080: address already in use (another switchboard? set listen.port)')
  })

  it('passes the message of any other system error through, in one line', () => {
    assert.equal(describeListenError(systemError('EINVAL'), MCP), 'cannot listen on 0.0.0.0:80: listen EINVAL: something 0.0.0.0:80')
  })

  it('leaves errors that are not system errors to be reported as faults', () => {
    assert.equal(describeListenError(new TypeError('boom'), MCP), undefined)
    assert.equal(describeListenError(Object.assign(new Error('x'), { code: 'FST_ERR_SOMETHING' }), MCP), undefined)
    assert.equal(describeListenError('EADDRINUSE', MCP), undefined)
  })
})
