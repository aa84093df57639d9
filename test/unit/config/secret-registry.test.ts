import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { createSecretRegistry, secretRegistry } from '../../../src/config/secret-registry.ts'
import { createLogger } from '../../../src/observability/logger.ts'
import { createFieldTest, redactFields } from '../../../src/gateway/audit.ts'
import { isCredentialName } from '../../../src/config/credential-names.ts'
import { redactConfig } from '../../../src/config/redact.ts'
import { parseConfig } from '../../../src/config/load-config.ts'

describe('secret registry', () => {
  it('replaces every registered value, the longest first, and ignores values too short to be secrets', () => {
    const r = createSecretRegistry()
    assert.equal(r.valueRedactor(), undefined, 'nothing to do while nothing is registered')
    r.registerValue('abc')
    r.registerValue('s3cr3t-token')
    r.registerValue('s3cr3t-token-and-more')
    assert.equal(r.redactValue('a=s3cr3t-token-and-more b=s3cr3t-token c=abc'), 'a=[redacted] b=[redacted] c=abc')
    const unchanged = 'nothing here'
    assert.equal(r.redactValue(unchanged), unchanged)
    assert.equal(typeof r.valueRedactor(), 'function')
  })

  it('matches key names by registered patterns: a RegExp, or a string anywhere in the name with case and separators ignored', () => {
    const r = createSecretRegistry()
    assert.equal(r.isSecretKey('x-vault-ref'), false)
    r.registerKeyPattern('vault_ref')
    r.registerKeyPattern(/^sig$/i)
    assert.equal(r.isSecretKey('X-Vault-Ref'), true)
    assert.equal(r.isSecretKey('vaultRef'), true)
    assert.equal(r.isSecretKey('SIG'), true)
    assert.equal(r.isSecretKey('signal'), false)
  })
})

describe('every redaction consults the process registry', () => {
  // Registered once for the whole process, as a stdio upstream's env value or a key pattern would be.
  const VALUE = 'registry-only-value-7f3a'
  secretRegistry.registerValue(VALUE)
  secretRegistry.registerKeyPattern('zz_registered_key')

  it('the logger: a registered value is replaced in messages, fields, child bindings and errors', () => {
    const lines: string[] = []
    const log = createLogger('info', { write: (line: string) => { lines.push(line) } })
    log.child({ upstream: `u ${VALUE}` }).warn({ detail: { text: `x ${VALUE} y` }, err: new Error(`failed with ${VALUE}`) }, `echo ${VALUE}`)
    assert.equal(lines.length, 1)
    assert.ok(!(lines[0] ?? '').includes(VALUE), lines[0])
    const line = JSON.parse(lines[0] ?? '{}') as { msg: string, upstream: string, detail: { text: string }, err: { message: string } }
    assert.equal(line.msg, 'echo [redacted]')
    assert.equal(line.upstream, 'u [redacted]')
    assert.equal(line.detail.text, 'x [redacted] y')
    assert.equal(line.err.message, 'failed with [redacted]')
  })

  it('the audit log: registered values and key patterns are redacted in arguments', () => {
    const test = createFieldTest([], [])
    assert.deepEqual(redactFields({ q: `find ${VALUE}`, zzRegisteredKey: 'x', n: 1 }, test, 0), { q: 'find [redacted]', zzRegisteredKey: '[redacted]', n: 1 })
  })

  it('credential names and the config shown by the admin API', () => {
    assert.equal(isCredentialName('--zz-registered-key'), true)
    const config = parseConfig(JSON.stringify({ upstreams: [{ name: 'files', transport: 'stdio', command: 'node', args: ['server.js', `--label=${VALUE}`, '--zz-registered-key', 'visible?'] }] }), {})
    const shown = JSON.stringify(redactConfig(config))
    assert.ok(!shown.includes(VALUE), shown)
    assert.ok(!shown.includes('visible?'), 'the value after a flag the registry names')
  })
})
