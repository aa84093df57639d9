import { test } from 'node:test'
import assert from 'node:assert/strict'
import { secretsOf } from '../../../src/auth/secret.ts'
import { RequestHeaders } from '../../../src/upstream/http-request-headers.ts'

function asObject (list: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i < list.length; i += 2) out[list[i] as string] = list[i + 1] as string
  return out
}

test('a plain POST sends what build gives, as one list kept until the session or the version changes', () => {
  const headers = new RequestHeaders({ authorization: 'Bearer fixed', 'content-type': 'text/plain' })
  const first = headers.plainPost()
  assert.deepEqual(asObject(first), headers.build('POST'))
  assert.equal(first.filter(h => h === 'content-type').length, 1, 'a later header replaces a fixed one of that name')
  assert.equal(headers.plainPost(), first)
  headers.sessionId = 'abc'
  const second = headers.plainPost()
  assert.notEqual(second, first)
  assert.equal(asObject(second)['mcp-session-id'], 'abc')
  headers.protocolVersion = '2025-11-25'
  assert.equal(asObject(headers.plainPost())['mcp-protocol-version'], '2025-11-25')
  assert.equal(asObject(headers.plainPost())['mcp-session-id'], 'abc')
})

test('a request\'s own headers: a GET accepts only event streams and carries its Last-Event-ID', () => {
  const headers = new RequestHeaders({})
  headers.sessionId = 's'
  assert.deepEqual(headers.build('GET', undefined, 'ev-1'), { accept: 'text/event-stream', 'mcp-session-id': 's', 'last-event-id': 'ev-1' })
  assert.deepEqual(headers.build('DELETE'), { 'mcp-session-id': 's' })
})

test('the shared list is used for a POST whose credentials are empty, never for one with a credential to reveal', () => {
  const headers = new RequestHeaders({})
  assert.equal(headers.for('POST', {}), headers.plainPost())
  assert.equal(headers.for('POST'), headers.plainPost())
  const withCredential = headers.for('POST', secretsOf({ authorization: 'Bearer user-token' }))
  assert.ok(!Array.isArray(withCredential))
  assert.equal(withCredential.authorization, 'Bearer user-token')
  assert.ok(!headers.plainPost().includes('Bearer user-token'))
  assert.ok(!Array.isArray(headers.for('POST', undefined, undefined, { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' })))
})
