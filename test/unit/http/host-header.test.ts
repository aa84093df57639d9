import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { parseHostHeader } from '../../../src/http/host-header.ts'

describe('parseHostHeader', () => {
  it('reads a name, an IPv4 or a bracketed IPv6 address, with or without a port, in lower case', () => {
    assert.deepEqual(parseHostHeader('LocalHost'), { hostname: 'localhost' })
    assert.deepEqual(parseHostHeader('gw.example:8443'), { hostname: 'gw.example', port: 8443 })
    assert.deepEqual(parseHostHeader('10.1.2.3:8080'), { hostname: '10.1.2.3', port: 8080 })
    assert.deepEqual(parseHostHeader('[::1]:8080'), { hostname: '[::1]', port: 8080 })
    assert.deepEqual(parseHostHeader('[FD00::2]'), { hostname: '[fd00::2]' })
    assert.deepEqual(parseHostHeader('switchboard_a:8080'), { hostname: 'switchboard_a', port: 8080 })
  })

  it('refuses userinfo, paths, queries, spaces and anything after the port', () => {
    for (const value of ['127.0.0.1:8080@evil.example', 'user@127.0.0.1', 'localhost/evil', 'localhost?x', 'localhost#x',
      'local host', ' localhost', 'localhost:8080:9090', 'localhost:80a', '[::1]:8080@evil.example', '[::1]x', 'localhost\\evil']) {
      assert.equal(parseHostHeader(value), undefined, value)
    }
  })

  it('refuses an empty or out-of-range port, an empty host and malformed names', () => {
    for (const value of ['', 'localhost:', ':8080', 'localhost:0', 'localhost:65536', 'localhost:123456', '[::1', '::1', '.evil', 'a..b', '-x', 'x-', 'é.example']) {
      assert.equal(parseHostHeader(value), undefined, value)
    }
    assert.equal(parseHostHeader('a'.repeat(300)), undefined)
  })
})
