import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import { tokensSchema } from '../../../../src/config/upstream-auth-schema.ts'
import { redisSchema } from '../../../../src/config/redis-schema.ts'
import { DEFAULT_TOKENS_FILE, createVault, type CreateVaultOptions, type CreatedVault } from '../../../../src/credentials/vault/create-vault.ts'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { redisOrSkip, startRedisServer } from '../../../helpers/redis-server.ts'
import { capturingLog, grantWith, newKey } from './vault-fixtures.ts'

function tempDir (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-vault-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  return dir
}

function created (t: TestContext, options: Omit<CreateVaultOptions, 'log'>): CreatedVault & { lines: Array<Record<string, unknown>> } {
  const { log, lines } = capturingLog()
  const made = createVault({ ...options, log })
  t.after(() => made.vault.close())
  return { ...made, lines }
}

const ALICE = { upstream: 'github', principal: 'jwt:alice' }

describe('createVault', () => {
  it('auto, with a config path and no redis: a file beside the config, mode 0600', async (t) => {
    const dir = tempDir(t)
    const { vault, store } = created(t, { tokens: tokensSchema.parse({ encryptionKey: newKey() }), configPath: join(dir, 'gateway.yaml') })
    assert.equal(store, 'file')
    await vault.put(ALICE, grantWith('alice'))
    assert.equal(statSync(join(dir, DEFAULT_TOKENS_FILE)).mode & 0o777, 0o600)
  })

  it('auto, with neither config path nor redis: memory; and a relative tokens.file is resolved beside the config', async (t) => {
    assert.equal(created(t, { tokens: tokensSchema.parse({ encryptionKey: newKey() }) }).store, 'memory')
    const dir = tempDir(t)
    const { vault, store } = created(t, { tokens: tokensSchema.parse({ encryptionKey: newKey(), file: 'vault/tokens.json' }), configPath: join(dir, 'gateway.yaml') })
    assert.equal(store, 'file')
    await vault.put(ALICE, grantWith('alice'))
    assert.ok(existsSync(join(dir, 'vault', 'tokens.json')))
  })

  it('auto, with a redis block: Redis, the records on the same store', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const { store, vault, records } = created(t, { tokens: tokensSchema.parse({ encryptionKey: newKey() }), redis: redisSchema.parse({ url: redis.url }), configPath: '/nonexistent/gateway.yaml' })
    assert.equal(store, 'redis')
    assert.equal(records, (vault as unknown as { records: unknown }).records)
  })

  it('store redis without a redis block is a config error', () => {
    assert.throws(() => createVault({ tokens: tokensSchema.parse({ encryptionKey: newKey(), store: 'redis' }), log: capturingLog().log }),
      (err: unknown) => isSwitchboardError(err, 'SB_ERR_CONFIG_INVALID'))
  })

  it('without tokens.encryptionKey: a random key and one warning that grants will not outlive the process', async (t) => {
    const { lines, vault } = created(t, {})
    const warnings = lines.filter(l => l.level === 40)
    assert.equal(warnings.length, 1)
    assert.match(String(warnings[0]?.msg), /tokens\.encryptionKey is not set/)
    await vault.put(ALICE, grantWith('alice'))
    assert.notEqual(await vault.get(ALICE), undefined)
  })

  it('counts every store fault through onFault', async (t) => {
    const dir = tempDir(t)
    const faults: string[] = []
    // A directory where the file should be: every write fails.
    const { vault } = created(t, { tokens: tokensSchema.parse({ encryptionKey: newKey(), file: dir }), onFault: op => { faults.push(op) } })
    await assert.rejects(vault.put(ALICE, grantWith('alice')), (err: unknown) => isSwitchboardError(err, 'SB_ERR_TOKEN_STORE_UNAVAILABLE'))
    assert.deepEqual(faults, ['write'])
  })
})
