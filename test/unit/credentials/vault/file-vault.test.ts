import assert from 'node:assert/strict'
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import { FileVault } from '../../../../src/credentials/vault/file-vault.ts'
import { Keyring, grantId } from '../../../../src/credentials/vault/sealed-record.ts'
import { capturingLog, grantWith, newKey } from './vault-fixtures.ts'

const ALICE = { upstream: 'github', principal: 'jwt:alice' }
const BOB = { upstream: 'github', principal: 'jwt:bob' }

function tempDir (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-vault-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

function fileVault (t: TestContext, path: string, key: string, previousKeys: string[] = []): { vault: FileVault, lines: Array<Record<string, unknown>> } {
  const { log, lines } = capturingLog()
  const vault = new FileVault({ keyring: new Keyring({ encryptionKey: key, previousKeys }), path, log })
  t.after(() => vault.close())
  return { vault, lines }
}

describe('file token vault', () => {
  it('writes the file with mode 0600, holding no token in the clear, and leaves no temporary file', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'tokens.json')
    const { vault } = fileVault(t, path, newKey())
    const grant = grantWith('alice')
    await vault.put(ALICE, grant)
    await vault.records.set('state:x', 'state-secret-value', 60_000)
    assert.equal(statSync(path).mode & 0o777, 0o600)
    const text = readFileSync(path, 'utf8')
    assert.ok(!text.includes(grant.accessToken.reveal()))
    assert.ok(!text.includes(grant.refreshToken?.reveal() ?? 'unset'))
    assert.ok(!text.includes('state-secret-value'))
    assert.ok(text.includes(grantId(ALICE)), 'ids are visible, values sealed')
    assert.deepEqual(readdirSync(dir), ['tokens.json'])
  })

  it('survives a restart: a new instance on the same file and key reads the grants and records', async (t) => {
    const path = join(tempDir(t), 'tokens.json')
    const key = newKey()
    const grant = grantWith('alice')
    const first = fileVault(t, path, key).vault
    await first.put(ALICE, grant)
    await first.records.set('client:github', 'registration')
    await first.close()
    const second = fileVault(t, path, key).vault
    assert.equal((await second.get(ALICE))?.accessToken.reveal(), grant.accessToken.reveal())
    assert.equal(await second.records.get('client:github'), 'registration')
  })

  it('after a key rotation, reads records sealed with the previous key and writes them back with the new one', async (t) => {
    const path = join(tempDir(t), 'tokens.json')
    const oldKey = newKey()
    await fileVault(t, path, oldKey).vault.put(ALICE, grantWith('alice'))
    const newer = newKey()
    const rotated = fileVault(t, path, newer, [oldKey]).vault
    assert.notEqual(await rotated.get(ALICE), undefined)
    const kid = new Keyring({ encryptionKey: newer }).kid
    const doc = JSON.parse(readFileSync(path, 'utf8')) as { records: Record<string, { sealed: string }> }
    assert.equal(doc.records[grantId(ALICE)]?.sealed.split('.')[1], kid)
    assert.notEqual(await fileVault(t, path, newer).vault.get(ALICE), undefined, 'the old key is no longer needed')
  })

  it('skips a corrupt record and a record that is not one, with a warning, and serves the others', async (t) => {
    const path = join(tempDir(t), 'tokens.json')
    const key = newKey()
    const good = grantWith('alice')
    const seed = fileVault(t, path, key).vault
    await seed.put(ALICE, good)
    await seed.close()
    const doc = JSON.parse(readFileSync(path, 'utf8')) as { records: Record<string, unknown> }
    doc.records[grantId(BOB)] = { sealed: 'sb1.00000000.garbage' }
    doc.records['grant:github:jwt%3Acarol'] = 42
    writeFileSync(path, JSON.stringify(doc), { mode: 0o600 })
    const { vault, lines } = fileVault(t, path, key)
    assert.deepEqual((await vault.list()).map(s => s.key.principal), ['jwt:alice'])
    assert.equal(await vault.get(BOB), undefined)
    assert.equal((await vault.get(ALICE))?.accessToken.reveal(), good.accessToken.reveal())
    const warnings = lines.filter(l => l.level === 40).map(l => l.msg)
    assert.ok(warnings.some(m => String(m).includes('not sealed records were skipped')), warnings.join('\n'))
    assert.ok(warnings.some(m => String(m).includes('cannot be opened is skipped')), warnings.join('\n'))
  })

  it('moves a file that is not JSON aside and starts empty, never crashing', async (t) => {
    const dir = tempDir(t)
    const path = join(dir, 'tokens.json')
    writeFileSync(path, '{ not json', { mode: 0o600 })
    const { vault, lines } = fileVault(t, path, newKey())
    assert.deepEqual(await vault.list(), [])
    await vault.put(ALICE, grantWith('alice'))
    assert.equal(readdirSync(dir).filter(f => f.startsWith('tokens.json.corrupt-')).length, 1)
    assert.ok(lines.some(l => l.level === 40 && String(l.msg).includes('moved aside')))
  })

  it('tightens a file readable by others to 0600 on the next write, and warns', async (t) => {
    const path = join(tempDir(t), 'tokens.json')
    const key = newKey()
    const seed = fileVault(t, path, key).vault
    await seed.put(ALICE, grantWith('alice'))
    await seed.close()
    chmodSync(path, 0o644)
    const { vault, lines } = fileVault(t, path, key)
    await vault.put(BOB, grantWith('bob'))
    assert.equal(statSync(path).mode & 0o777, 0o600)
    assert.ok(lines.some(l => l.level === 40 && String(l.msg).includes('readable by other users')))
  })
})
