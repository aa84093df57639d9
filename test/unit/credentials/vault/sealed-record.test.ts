import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { inspect } from 'node:util'
import { Secret } from '../../../../src/auth/secret.ts'
import { MemoryBackend } from '../../../../src/credentials/vault/memory-vault.ts'
import {
  Keyring, SealedRecordError, grantId, grantKeyOf, keyIdOf, parseGrant, recordId, serializeGrant
} from '../../../../src/credentials/vault/sealed-record.ts'
import { SealedVault } from '../../../../src/credentials/vault/sealed-vault.ts'
import { capturingLog, grantWith, newKey } from './vault-fixtures.ts'

const ALICE = { upstream: 'github', principal: 'jwt:alice' }
const BOB = { upstream: 'github', principal: 'jwt:bob' }

function reasonOf (fn: () => unknown): string | undefined {
  try {
    fn()
    return undefined
  } catch (err: unknown) {
    assert.ok(err instanceof SealedRecordError, String(err))
    return err.reason
  }
}

describe('Keyring', () => {
  it('opens what it sealed, and names the key by the first 8 hex digits of its SHA-256', () => {
    const key = newKey()
    const keyring = new Keyring({ encryptionKey: key })
    const sealed = keyring.seal('hello', 'grant:a:b')
    assert.equal(keyring.kid, keyIdOf(Buffer.from(key, 'base64')))
    assert.match(keyring.kid, /^[0-9a-f]{8}$/)
    assert.equal(sealed.split('.')[1], keyring.kid)
    assert.deepEqual(keyring.open(sealed, 'grant:a:b'), { plaintext: 'hello', stale: false })
    assert.ok(!sealed.includes('hello'))
  })

  it('seals the same text differently each time (a fresh IV)', () => {
    const keyring = new Keyring({ encryptionKey: newKey() })
    assert.notEqual(keyring.seal('same', 'id'), keyring.seal('same', 'id'))
  })

  it('refuses a record opened under another id: a record copied to another principal\'s key does not open', () => {
    const keyring = new Keyring({ encryptionKey: newKey() })
    const sealed = keyring.seal('token', grantId(ALICE))
    assert.equal(reasonOf(() => keyring.open(sealed, grantId(BOB))), 'unauthentic')
  })

  it('refuses altered ciphertext, an altered tag, and text that is not a sealed record', () => {
    const keyring = new Keyring({ encryptionKey: newKey() })
    const sealed = keyring.seal('a token of some length', 'id')
    const parts = sealed.split('.')
    const data = Buffer.from(parts[4] ?? '', 'base64url')
    data[0] = (data[0] ?? 0) ^ 1
    assert.equal(reasonOf(() => keyring.open([...parts.slice(0, 4), data.toString('base64url')].join('.'), 'id')), 'unauthentic')
    const tag = Buffer.from(parts[3] ?? '', 'base64url')
    tag[0] = (tag[0] ?? 0) ^ 1
    assert.equal(reasonOf(() => keyring.open([...parts.slice(0, 3), tag.toString('base64url'), parts[4]].join('.'), 'id')), 'unauthentic')
    assert.equal(reasonOf(() => keyring.open('garbage', 'id')), 'malformed')
  })

  it('opens a record sealed with a previous key and says it is stale; an unknown key id is refused', () => {
    const oldKey = newKey()
    const old = new Keyring({ encryptionKey: oldKey })
    const sealed = old.seal('text', 'id')
    const rotated = new Keyring({ encryptionKey: newKey(), previousKeys: [oldKey] })
    assert.deepEqual(rotated.open(sealed, 'id'), { plaintext: 'text', stale: true })
    assert.equal(reasonOf(() => new Keyring({ encryptionKey: newKey() }).open(sealed, 'id')), 'unknown-key')
  })

  it('makes a random key when none is configured, and says so', () => {
    const a = new Keyring()
    const b = new Keyring()
    assert.equal(a.ephemeral, true)
    assert.equal(new Keyring({ encryptionKey: newKey() }).ephemeral, false)
    assert.notEqual(a.kid, b.kid)
  })

  it('refuses a key that is not 32 bytes', () => {
    assert.throws(() => new Keyring({ encryptionKey: Buffer.alloc(16).toString('base64') }), /32 bytes/)
  })
})

describe('grant records', () => {
  it('round-trips a grant, its tokens as Secrets that never print', () => {
    const grant = grantWith('alice')
    const back = parseGrant(serializeGrant(grant))
    assert.ok(back.accessToken instanceof Secret)
    assert.equal(back.accessToken.reveal(), grant.accessToken.reveal())
    assert.equal(back.refreshToken?.reveal(), grant.refreshToken?.reveal())
    assert.deepEqual({ ...back, accessToken: undefined, refreshToken: undefined }, { ...grant, accessToken: undefined, refreshToken: undefined })
    const printed = JSON.stringify(back) + inspect(back) + String(back.accessToken)
    assert.ok(!printed.includes(grant.accessToken.reveal()))
  })

  it('keeps optional fields absent, and refuses text that is not a grant', () => {
    const back = parseGrant(serializeGrant({ accessToken: new Secret('x'), tokenType: 'Bearer', obtainedAt: 1, type: 'client_credentials' }))
    assert.deepEqual(Object.keys(back).sort(), ['accessToken', 'obtainedAt', 'tokenType', 'type'])
    assert.throws(() => parseGrant('{"accessToken":1}'))
    assert.throws(() => parseGrant('null'))
  })

  it('ids escape what could forge another grant\'s id or break a Redis hash tag', () => {
    const odd = { upstream: 'a:b', principal: 'jwt:{x}%y' }
    assert.equal(grantId(odd), 'grant:a%3Ab:jwt%3A%7Bx%7D%25y')
    assert.deepEqual(grantKeyOf(grantId(odd)), odd)
    assert.notEqual(grantId({ upstream: 'a', principal: 'b:c' }), grantId({ upstream: 'a:b', principal: 'c' }))
    assert.equal(recordId('state:{1}'), 'record:state%3A%7B1%7D')
    assert.equal(grantKeyOf(recordId('x')), undefined)
  })
})

describe('SealedVault over one store', () => {
  it('reads a grant sealed with a previous key and seals it again with the current key on that read', async () => {
    const backend = new MemoryBackend()
    const oldKey = newKey()
    await new SealedVault(backend, { keyring: new Keyring({ encryptionKey: oldKey }) }).put(ALICE, grantWith('alice'))
    const before = await backend.get(grantId(ALICE))
    const currentKey = newKey()
    const current = new Keyring({ encryptionKey: currentKey, previousKeys: [oldKey] })
    const vault = new SealedVault(backend, { keyring: current })
    const grant = await vault.get(ALICE)
    assert.ok(grant !== undefined)
    const after = await backend.get(grantId(ALICE))
    assert.notEqual(after, before)
    assert.equal(after?.split('.')[1], current.kid)
    // Once re-sealed, the old key is no longer needed.
    const withoutOld = new SealedVault(backend, { keyring: new Keyring({ encryptionKey: currentKey }) })
    assert.equal((await withoutOld.get(ALICE))?.accessToken.reveal(), grant.accessToken.reveal())
  })

  it('skips a record sealed with an unknown key: absent to get and list, warned once, left in the store', async () => {
    const backend = new MemoryBackend()
    await new SealedVault(backend, { keyring: new Keyring({ encryptionKey: newKey() }) }).put(ALICE, grantWith('alice'))
    const { log, lines } = capturingLog()
    const vault = new SealedVault(backend, { keyring: new Keyring({ encryptionKey: newKey() }), log })
    assert.equal(await vault.get(ALICE), undefined)
    assert.deepEqual(await vault.list(), [])
    const warnings = lines.filter(l => l.level === 40)
    assert.equal(warnings.length, 1)
    assert.equal(warnings[0]?.reason, 'unknown-key')
    assert.notEqual(await backend.get(grantId(ALICE)), undefined)
  })

  it('skips a grant record copied under another principal\'s id', async () => {
    const backend = new MemoryBackend()
    const vault = new SealedVault(backend, { keyring: new Keyring({ encryptionKey: newKey() }), log: capturingLog().log })
    await vault.put(ALICE, grantWith('alice'))
    const sealed = await backend.get(grantId(ALICE))
    assert.ok(sealed !== undefined)
    await backend.set(grantId(BOB), sealed)
    assert.equal(await vault.get(BOB), undefined)
    assert.deepEqual((await vault.list()).map(s => s.key.principal), ['jwt:alice'])
  })
})
