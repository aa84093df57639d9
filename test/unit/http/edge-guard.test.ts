import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import type { IncomingHttpHeaders } from 'node:http'
import { checkEdge, createEdgePolicy, isLoopbackHost, type EdgePolicy } from '../../../src/http/edge-guard.ts'

const LOCAL = createEdgePolicy('127.0.0.1', [], [])

function accepted (headers: IncomingHttpHeaders, policy: EdgePolicy = LOCAL): void {
  assert.equal(checkEdge(headers, policy), undefined, `expected ${JSON.stringify(headers)} to be accepted`)
}

function refused (headers: IncomingHttpHeaders, policy: EdgePolicy = LOCAL): string {
  const reason = checkEdge(headers, policy)
  assert.equal(typeof reason, 'string', `expected ${JSON.stringify(headers)} to be refused`)
  return reason as string
}

describe('isLoopbackHost', () => {
  it('recognises loopback names and addresses', () => {
    for (const host of ['localhost', 'LOCALHOST', '127.0.0.1', '127.1.2.3', '[::1]', '::1']) assert.ok(isLoopbackHost(host), host)
  })

  it('does not mistake look-alikes for loopback', () => {
    for (const host of ['localhost.evil.example.com', '127.0.0.1.evil.example.com', 'evil.example.com', '0.0.0.0', '128.0.0.1', '']) {
      assert.ok(!isLoopbackHost(host), host)
    }
  })
})

describe('checkEdge Host', () => {
  it('accepts loopback Host values without a port', () => {
    for (const host of ['localhost', '127.0.0.1', '[::1]']) accepted({ host })
  })

  it('accepts loopback Host values with a port', () => {
    for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080']) accepted({ host })
  })

  it('accepts a loopback Host in any case', () => {
    accepted({ host: 'LocalHost:8080' })
  })

  it('refuses a foreign Host', () => {
    assert.match(refused({ host: 'evil.example.com' }), /evil\.example\.com/)
    refused({ host: 'evil.example.com:8080' })
    refused({ host: 'localhost.evil.example.com' })
    refused({ host: '127.0.0.1.evil.example.com' })
  })

  it('refuses a missing or empty Host', () => {
    assert.match(refused({}), /Host/)
    refused({ host: '' })
  })

  it('refuses a malformed IPv6 Host', () => {
    refused({ host: '[::1' })
  })

  it('refuses a Host that hides a foreign name after userinfo or a path', () => {
    for (const host of ['127.0.0.1:8080@evil.example', 'localhost@evil.example', 'localhost/x', 'localhost:8080:1', 'localhost:99999']) {
      assert.match(refused({ host }), /not a valid host/, host)
    }
  })

  it('accepts this machine\'s own addresses on a wildcard bind (a kubelet probe sends Host: <pod IP>:<port>)', () => {
    const policy = createEdgePolicy('0.0.0.0', [], [], ['10.244.1.7', '[fd00::7]'])
    accepted({ host: '10.244.1.7:8080' }, policy)
    accepted({ host: '[fd00::7]:8080' }, policy)
    refused({ host: '10.244.1.8:8080' }, policy)
    refused({ host: 'evil.example:8080' }, policy)
  })

  it('accepts the bind address when it is an IPv6 address', () => {
    accepted({ host: '[fd00::9]:8080' }, createEdgePolicy('fd00::9', [], []))
  })

  it('lets a request without Host through only when asked (HTTP/1.0 health checks), never an empty one', () => {
    assert.equal(checkEdge({}, LOCAL, { missingHostOk: true }), undefined)
    assert.equal(typeof checkEdge({ host: '' }, LOCAL, { missingHostOk: true }), 'string')
    assert.equal(typeof checkEdge({ origin: 'https://evil.example' }, LOCAL, { missingHostOk: true }), 'string')
  })

  it('accepts Hosts configured in allowedHosts, with or without a port', () => {
    const policy = createEdgePolicy('127.0.0.1', ['gateway.internal', 'proxy.example.com:443'], [])
    accepted({ host: 'gateway.internal' }, policy)
    accepted({ host: 'gateway.internal:8080' }, policy)
    accepted({ host: 'GATEWAY.internal' }, policy)
    accepted({ host: 'proxy.example.com:443' }, policy)
    refused({ host: 'proxy.example.com:8443' }, policy)
    refused({ host: 'evil.example.com' }, policy)
  })

  it('accepts the bind address when it is a name', () => {
    const policy = createEdgePolicy('gw.lan', [], [])
    accepted({ host: 'gw.lan:8080' }, policy)
    refused({ host: 'evil.example.com' }, policy)
  })

  it('does not allow arbitrary hosts when binding to every interface', () => {
    for (const listen of ['0.0.0.0', '::']) {
      const policy = createEdgePolicy(listen, [], [])
      refused({ host: 'evil.example.com' }, policy)
      refused({ host: '0.0.0.0:8080' }, policy)
      refused({ host: '192.168.1.10:8080' }, policy)
      accepted({ host: 'localhost:8080' }, policy)
    }
  })
})

describe('checkEdge Origin', () => {
  it('accepts a request without Origin', () => {
    accepted({ host: 'localhost:8080' })
  })

  it('accepts loopback origins', () => {
    for (const origin of ['http://localhost', 'http://localhost:3000', 'https://127.0.0.1:8443', 'http://[::1]:3000', 'HTTP://LOCALHOST:3000']) {
      accepted({ host: 'localhost:8080', origin })
    }
  })

  it('refuses a foreign origin even with a loopback Host', () => {
    assert.match(refused({ host: 'localhost:8080', origin: 'https://evil.example.com' }), /Origin/)
    refused({ host: 'localhost:8080', origin: 'http://localhost.evil.example.com' })
  })

  it('refuses the null origin', () => {
    refused({ host: 'localhost:8080', origin: 'null' })
  })

  it('refuses non-web loopback origins', () => {
    refused({ host: 'localhost:8080', origin: 'file://localhost' })
    refused({ host: 'localhost:8080', origin: 'chrome-extension://abcdef' })
  })

  it('accepts origins configured in allowedOrigins, in any case', () => {
    const policy = createEdgePolicy('127.0.0.1', [], ['https://app.example.com'])
    accepted({ host: 'localhost', origin: 'https://app.example.com' }, policy)
    accepted({ host: 'localhost', origin: 'https://APP.example.com' }, policy)
    refused({ host: 'localhost', origin: 'https://app.example.com:8443' }, policy)
    refused({ host: 'localhost', origin: 'https://evil.example.com' }, policy)
  })

  it('skips only the Origin check for a document public to every origin', () => {
    assert.equal(checkEdge({ host: 'localhost', origin: 'https://other.example' }, LOCAL, { anyOrigin: true }), undefined)
    assert.equal(typeof checkEdge({ host: 'evil.example', origin: 'https://other.example' }, LOCAL, { anyOrigin: true }), 'string')
  })

  it('checks the Host even when the origin is allowed', () => {
    const policy = createEdgePolicy('127.0.0.1', [], ['https://app.example.com'])
    refused({ host: 'evil.example.com', origin: 'https://app.example.com' }, policy)
  })
})
