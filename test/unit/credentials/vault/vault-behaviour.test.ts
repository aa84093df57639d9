import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import { FileVault } from '../../../../src/credentials/vault/file-vault.ts'
import { MemoryVault } from '../../../../src/credentials/vault/memory-vault.ts'
import { RedisVault } from '../../../../src/credentials/vault/redis-vault.ts'
import { Keyring } from '../../../../src/credentials/vault/sealed-record.ts'
import type { SealedVault } from '../../../../src/credentials/vault/sealed-vault.ts'
import { redisOrSkip, startRedisServer } from '../../../helpers/redis-server.ts'
import { waitFor } from '../../../helpers/start-gateway.ts'
import { bounded, capturingLog, grantWith, newKey } from './vault-fixtures.ts'

/** One store per test, released when it ends; undefined when the store cannot run here (skipped). */
type MakeVault = (t: TestContext) => Promise<SealedVault | undefined>

const STORES: Array<{ name: string, make: MakeVault }> = [
  {
    name: 'memory',
    make: async () => new MemoryVault({ keyring: new Keyring({ encryptionKey: newKey() }) })
  },
  {
    name: 'file',
    make: async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'switchboard-vault-'))
      const vault = new FileVault({ keyring: new Keyring({ encryptionKey: newKey() }), path: join(dir, 'tokens.json'), log: capturingLog().log })
      t.after(async () => { await vault.close(); rmSync(dir, { recursive: true, force: true }) })
      return vault
    }
  },
  {
    name: 'redis',
    make: async (t) => {
      if (!redisOrSkip(t)) return undefined
      const redis = await startRedisServer(t)
      const vault = new RedisVault({ keyring: new Keyring({ encryptionKey: newKey() }), url: redis.url, keyPrefix: 'sbtest', commandTimeoutMs: 1000 })
      t.after(() => vault.close())
      await vault.connected()
      return vault
    }
  }
]

const ALICE_GITHUB = { upstream: 'github', principal: 'jwt:alice' }
const ALICE_LINEAR = { upstream: 'linear', principal: 'jwt:alice' }
const BOB_GITHUB = { upstream: 'github', principal: 'jwt:bob' }
const delay = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

for (const { name, make } of STORES) {
  describe(`token vault, ${name} store`, () => {
    it('gives back the grant put, tokens as Secrets, and nothing for a key never put', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      const grant = grantWith('alice')
      await vault.put(ALICE_GITHUB, grant)
      const back = await vault.get(ALICE_GITHUB)
      assert.equal(back?.accessToken.reveal(), grant.accessToken.reveal())
      assert.equal(back?.refreshToken?.reveal(), grant.refreshToken?.reveal())
      assert.deepEqual([back?.tokenType, back?.expiresAt, back?.scope, back?.obtainedAt, back?.type], [grant.tokenType, grant.expiresAt, grant.scope, grant.obtainedAt, grant.type])
      assert.equal(String(back?.accessToken), '[redacted]')
      assert.equal(await vault.get(BOB_GITHUB), undefined)
    })

    it('replaces a grant put again (a refresh), and deletes it: true once, then false', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      await vault.put(ALICE_GITHUB, grantWith('first'))
      const second = grantWith('second')
      await vault.put(ALICE_GITHUB, second)
      assert.equal((await vault.get(ALICE_GITHUB))?.accessToken.reveal(), second.accessToken.reveal())
      assert.equal(await vault.delete(ALICE_GITHUB), true)
      assert.equal(await vault.get(ALICE_GITHUB), undefined)
      assert.equal(await vault.delete(ALICE_GITHUB), false)
    })

    it('lists summaries filtered by upstream, principal or both, never a token', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      const grants = [grantWith('a-gh'), grantWith('a-li', { refreshToken: undefined }), grantWith('b-gh')]
      await vault.put(ALICE_GITHUB, grants[0]!)
      await vault.put(ALICE_LINEAR, grants[1]!)
      await vault.put(BOB_GITHUB, grants[2]!)
      const all = await vault.list()
      assert.deepEqual(all.map(s => [s.key.upstream, s.key.principal, s.refreshable]), [
        ['github', 'jwt:alice', true], ['github', 'jwt:bob', true], ['linear', 'jwt:alice', false]
      ])
      assert.deepEqual(all[0], { key: ALICE_GITHUB, type: 'oauth', scope: 'repo read:user', expiresAt: 1_900_000_000_000, obtainedAt: 1_800_000_000_000, refreshable: true })
      assert.deepEqual((await vault.list({ upstream: 'github' })).map(s => s.key.principal), ['jwt:alice', 'jwt:bob'])
      assert.deepEqual((await vault.list({ principal: 'jwt:alice' })).map(s => s.key.upstream), ['github', 'linear'])
      assert.deepEqual((await vault.list({ upstream: 'linear', principal: 'jwt:bob' })), [])
      assert.deepEqual((await vault.list({ upstream: 'linear', principal: 'jwt:alice' })).length, 1)
      const text = JSON.stringify(all)
      for (const g of grants) {
        assert.ok(!text.includes(g.accessToken.reveal()))
        if (g.refreshToken !== undefined) assert.ok(!text.includes(g.refreshToken.reveal()))
      }
    })

    it('keeps jwt:alice and api-key:alice apart', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      const jwt = grantWith('jwt')
      const apiKey = grantWith('api-key')
      await vault.put({ upstream: 'github', principal: 'jwt:alice' }, jwt)
      await vault.put({ upstream: 'github', principal: 'api-key:alice' }, apiKey)
      assert.equal((await vault.get({ upstream: 'github', principal: 'jwt:alice' }))?.accessToken.reveal(), jwt.accessToken.reveal())
      assert.equal((await vault.get({ upstream: 'github', principal: 'api-key:alice' }))?.accessToken.reveal(), apiKey.accessToken.reveal())
      await vault.delete({ upstream: 'github', principal: 'api-key:alice' })
      assert.notEqual(await vault.get({ upstream: 'github', principal: 'jwt:alice' }), undefined)
    })

    it('records: set, get, delete, and take finds a record once', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      await vault.records.set('state:abc', '{"principal":"jwt:alice"}')
      assert.equal(await vault.records.get('state:abc'), '{"principal":"jwt:alice"}')
      assert.equal(await vault.records.take('state:abc'), '{"principal":"jwt:alice"}')
      assert.equal(await vault.records.take('state:abc'), undefined)
      assert.equal(await vault.records.get('state:abc'), undefined)
      await vault.records.set('client:github', 'registration')
      await vault.records.delete('client:github')
      assert.equal(await vault.records.get('client:github'), undefined)
      assert.deepEqual(await vault.list(), [], 'records are not grants')
    })

    it('records: of two concurrent takes, exactly one gets the record', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      await vault.records.set('state:once', 'v', 60_000)
      const taken = await Promise.all([vault.records.take('state:once'), vault.records.take('state:once')])
      assert.deepEqual(taken.filter(v => v !== undefined), ['v'])
    })

    it('records: one set with a TTL expires, one without stays', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      await vault.records.set('state:long', 'stays', 60_000)
      await vault.records.set('state:short', 'goes', 50)
      await waitFor(async () => await vault.records.get('state:short') === undefined, 'the short record to expire', 5000)
      assert.equal(await vault.records.take('state:short'), undefined)
      assert.equal(await vault.records.get('state:long'), 'stays')
    })

    it('exclusive: holders of one grant run one at a time, a throwing holder releases, another grant is not held up', async (t) => {
      const vault = await make(t)
      if (vault === undefined) return
      const events: string[] = []
      const hold = async (i: number): Promise<number> => await vault.exclusive(ALICE_GITHUB, async () => {
        events.push(`enter ${i}`)
        await delay(20)
        events.push(`exit ${i}`)
        if (i === 1) throw new Error('refresh failed')
        return i
      })
      const results = await Promise.allSettled([hold(0), hold(1), hold(2)])
      assert.deepEqual(results.map(r => r.status), ['fulfilled', 'rejected', 'fulfilled'])
      for (let i = 0; i < events.length; i += 2) assert.equal(events[i]?.replace('enter', 'exit'), events[i + 1], events.join(', '))
      assert.equal(events.length, 6)
      let release: (() => void) | undefined
      const aliceHeld = vault.exclusive(ALICE_GITHUB, async () => { await new Promise<void>(resolve => { release = resolve }) })
      await waitFor(() => release !== undefined, 'alice\'s grant to be held')
      assert.equal(await bounded(vault.exclusive(BOB_GITHUB, async () => 'other'), 'bob\'s exclusive while alice\'s is held'), 'other')
      release?.()
      await aliceHeld
    })
  })
}
