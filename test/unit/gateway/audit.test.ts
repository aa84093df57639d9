import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { auditSchema } from '../../../src/config/access-schema.ts'
import { createAuditLog, jsonBytes, redactFields } from '../../../src/gateway/audit.ts'
import { createLogger } from '../../../src/observability/logger.ts'

function capture () {
  const lines: Array<Record<string, unknown>> = []
  const log = createLogger('info', { write (line: string) { lines.push(JSON.parse(line) as Record<string, unknown>) } })
  return { lines, log }
}

const record = {
  callId: '0b5e7c9e-1d2f-4a8b-9c3d-5e6f7a8b9c0d',
  principal: { id: 'alice', roles: ['dev'], via: 'api-key' as const },
  tool: 'files__read',
  upstream: 'files',
  outcome: 'ok' as const,
  durationMs: 1.23456,
  responseBytes: 42,
  arguments: { path: '/tmp/a', password: 'hunter2', nested: { Token: 't0ken', list: [{ apiKey: 'k' }] } }
}

describe('audit log', () => {
  it('writes one line per call with who, what, where, outcome, duration and size, and no arguments by default', () => {
    const { lines, log } = capture()
    const audit = createAuditLog(auditSchema.parse({}), log)
    assert.ok(audit)
    audit(record)
    assert.equal(lines.length, 1)
    const line = lines[0] as Record<string, unknown>
    assert.equal(line.msg, 'tool call')
    assert.equal(line.component, 'audit')
    assert.deepEqual(
      { principal: line.principal, via: line.via, tool: line.tool, upstream: line.upstream, outcome: line.outcome, durationMs: line.durationMs, responseBytes: line.responseBytes },
      { principal: 'alice', via: 'api-key', tool: 'files__read', upstream: 'files', outcome: 'ok', durationMs: 1.235, responseBytes: 42 })
    assert.equal('arguments' in line, false)
    assert.doesNotMatch(JSON.stringify(line), /hunter2/)
  })

  it('carries the call id of the request, so approvals and webhooks can name the same call', () => {
    const { lines, log } = capture()
    const audit = createAuditLog(auditSchema.parse({}), log)
    assert.ok(audit)
    audit(record)
    audit({ ...record, callId: 'another-call' })
    assert.deepEqual(lines.map(l => l.callId), [record.callId, 'another-call'])
  })

  it('includes arguments when configured, with the configured fields redacted at any depth and any case', () => {
    const { lines, log } = capture()
    createAuditLog(auditSchema.parse({ arguments: true }), log)?.(record)
    const args = (lines[0] as Record<string, unknown>).arguments
    assert.deepEqual(args, { path: '/tmp/a', password: '[redacted]', nested: { Token: '[redacted]', list: [{ apiKey: '[redacted]' }] } })
  })

  it('redacts fields whose name contains a secret-looking word, whatever its case and separators', () => {
    const { lines, log } = capture()
    const secrets = { client_secret: 1, access_token: 2, privateKey: 3, sessionToken: 4, pwd: 5, password: 6, api_key: 7, 'X-Api-Key': 8, authorization: 9, Cookie: 10, aws_credentials: 11 }
    createAuditLog(auditSchema.parse({ arguments: true }), log)?.({ ...record, arguments: { path: '/srv', query: 'q', nested: [secrets] } })
    const args = (lines[0] as { arguments: { path: string, query: string, nested: Array<Record<string, unknown>> } }).arguments
    assert.deepEqual(args.nested[0], Object.fromEntries(Object.keys(secrets).map(k => [k, '[redacted]'])))
    assert.equal(args.path, '/srv')
    assert.equal(args.query, 'q')
  })

  it('redacts only the fields named when both lists are replaced', () => {
    const { lines, log } = capture()
    createAuditLog(auditSchema.parse({ arguments: true, redact: ['path'], redactPatterns: [] }), log)?.(record)
    const args = (lines[0] as Record<string, Record<string, unknown>>).arguments
    assert.equal(args?.path, '[redacted]')
    assert.equal(args?.password, 'hunter2')
  })

  it('is off when disabled', () => {
    assert.equal(createAuditLog(auditSchema.parse({ enabled: false }), capture().log), undefined)
  })

  it('cuts arguments nested deeper than it will walk', () => {
    let deep: unknown = 'bottom'
    for (let i = 0; i < 20; i++) deep = { d: deep }
    assert.match(JSON.stringify(redactFields(deep, new Set(), 0)), /\[truncated\]/)
  })

  it('counts response bytes as UTF-8 JSON', () => {
    assert.equal(jsonBytes({ a: 'é' }), Buffer.byteLength('{"a":"é"}'))
  })
})
