import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { Session } from 'node:inspector/promises'
import { inspect } from 'node:util'
import { createApiKeyVerifier } from '../../../src/auth/api-keys.ts'

const CI_KEY = 'ci-key-0123456789abcdefghij'
const OPS_KEY = 'ops-key-zyxwvutsrqponmlkjih'
const KEYS = [
  { id: 'ci-bot', key: CI_KEY, roles: ['ci', 'reader'] },
  { id: 'ops', key: OPS_KEY, roles: [] }
]

const hexBytes = (b: Buffer): string => [...b].map(x => x.toString(16).padStart(2, '0')).join(' ')

/** Every form the plaintext key could take in an inspect() dump: the string, and its bytes as a Buffer shows them. */
function plaintextForms (key: string): string[] {
  return [key, hexBytes(Buffer.from(key)).slice(0, 3 * 16 - 1), Buffer.from(key).toString('base64')]
}

/**
 * What the verifier's closures actually retain, read through the inspector's [[Scopes]] (the
 * variables V8 keeps alive for the function), each dumped with util.inspect.
 */
async function closureDump (t: TestContext, fn: (token: string) => unknown): Promise<string> {
  const session = new Session()
  session.connect()
  t.after(() => { session.disconnect() })
  const g = globalThis as Record<string, unknown>
  g.__sbProbe = fn
  g.__sbDump = (value: unknown) => inspect(value, { depth: 8, showHidden: true, maxArrayLength: null, maxStringLength: null })
  t.after(() => { delete g.__sbProbe; delete g.__sbDump })
  const { result: fnObject } = await session.post('Runtime.evaluate', { expression: 'globalThis.__sbProbe' })
  assert.ok(fnObject.objectId)
  const { internalProperties = [] } = await session.post('Runtime.getProperties', { objectId: fnObject.objectId, ownProperties: true })
  const scopes = internalProperties.find(p => p.name === '[[Scopes]]')?.value?.objectId
  assert.ok(scopes, 'the function exposes [[Scopes]]')
  const { result: scopeList } = await session.post('Runtime.getProperties', { objectId: scopes, ownProperties: true })
  const parts: string[] = []
  for (const scope of scopeList) {
    // Closure scopes only: the module and global scopes hold the test's own constants.
    if (scope.value?.description?.startsWith('Closure') !== true || scope.value.objectId === undefined) continue
    const { result: variables } = await session.post('Runtime.getProperties', { objectId: scope.value.objectId, ownProperties: true })
    for (const variable of variables) {
      const v = variable.value
      if (v?.objectId === undefined) { parts.push(`${variable.name}=${String(v?.value)}`); continue }
      const { result } = await session.post('Runtime.callFunctionOn', {
        objectId: v.objectId, functionDeclaration: 'function () { return globalThis.__sbDump(this) }', returnByValue: true
      })
      parts.push(`${variable.name}=${String(result.value)}`)
    }
  }
  return parts.join('\n')
}

describe('createApiKeyVerifier', () => {
  const verify = createApiKeyVerifier(KEYS)

  it('returns the key\'s principal with its roles for a configured key', () => {
    assert.deepEqual(verify(CI_KEY), { id: 'ci-bot', roles: ['ci', 'reader'], via: 'api-key' })
    assert.deepEqual(verify(OPS_KEY), { id: 'ops', roles: [], via: 'api-key' })
  })

  it('returns the same frozen principal on every call', () => {
    const a = verify(CI_KEY)
    assert.equal(a, verify(CI_KEY))
    assert.ok(Object.isFrozen(a) && Object.isFrozen(a?.roles))
  })

  it('refuses a wrong key, a prefix or extension of a key, another case and the empty string', () => {
    for (const token of ['wrong-key-0123456789abcdef', CI_KEY.slice(0, -1), CI_KEY.slice(0, 8), `${CI_KEY}x`, CI_KEY.toUpperCase(), '']) {
      assert.equal(verify(token), undefined, token)
    }
  })

  it('refuses everything when no key is configured', () => {
    assert.equal(createApiKeyVerifier([])(CI_KEY), undefined)
  })

  it('does not share roles with the config: changing the config later changes no principal', () => {
    const roles = ['a']
    const v = createApiKeyVerifier([{ id: 'x', key: CI_KEY, roles }])
    roles.push('admin')
    assert.deepEqual(v(CI_KEY)?.roles, ['a'])
  })

  it('keeps only digests: no plaintext key in what the verifier\'s closures retain', async (t) => {
    const dump = await closureDump(t, verify)
    // The probe reaches the data: the digests and principals are there.
    for (const key of [CI_KEY, OPS_KEY]) assert.ok(dump.includes(hexBytes(createHash('sha256').update(key).digest())), 'digest visible')
    assert.ok(dump.includes('ci-bot'))
    for (const key of [CI_KEY, OPS_KEY]) {
      for (const form of plaintextForms(key)) assert.ok(!dump.includes(form), `closure holds ${form}`)
    }
  })

  it('shows no key through the function object itself', () => {
    const shown = inspect(verify, { showHidden: true, depth: 8 }) + JSON.stringify(Object.getOwnPropertyDescriptors(verify))
    for (const key of [CI_KEY, OPS_KEY]) assert.ok(!shown.includes(key))
  })
})
