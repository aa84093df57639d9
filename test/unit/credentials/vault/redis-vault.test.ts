import assert from 'node:assert/strict'
import { once } from 'node:events'
import { describe, it } from 'node:test'
import type { TestContext } from 'node:test'
import type { Redis } from 'ioredis'
import { isSwitchboardError } from '../../../../src/errors.ts'
import { closeRedisClient, createRedisClient } from '../../../../src/net/redis-client.ts'
import { RedisVault, type RedisVaultOptions } from '../../../../src/credentials/vault/redis-vault.ts'
import { Keyring } from '../../../../src/credentials/vault/sealed-record.ts'
import { redisOrSkip, startRedisServer } from '../../../helpers/redis-server.ts'
import { waitFor } from '../../../helpers/start-gateway.ts'
import { bounded, grantWith, newKey } from './vault-fixtures.ts'

const PREFIX = 'sbtest'
const COMMAND_TIMEOUT_MS = 300
const ALICE = { upstream: 'github', principal: 'jwt:alice' }
const delay = async (ms: number): Promise<void> => { await new Promise(resolve => setTimeout(resolve, ms)) }

/** A replica's vault: its own ioredis client. */
async function replica (t: TestContext, url: string, options: Partial<RedisVaultOptions> = {}): Promise<RedisVault> {
  const vault = new RedisVault({ url, keyPrefix: PREFIX, commandTimeoutMs: COMMAND_TIMEOUT_MS, ...options, keyring: options.keyring ?? new Keyring({ encryptionKey: newKey() }) })
  t.after(() => vault.close())
  await vault.connected()
  return vault
}

async function admin (t: TestContext, url: string): Promise<Redis> {
  const client = createRedisClient({ url, commandTimeoutMs: 2000, connectionName: 'sbtest-admin' })
  t.after(() => closeRedisClient(client))
  if (client.status !== 'ready') await once(client, 'ready')
  return client
}

async function allValues (client: Redis): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for (const key of await client.keys('*')) out.set(key, await client.get(key) ?? '')
  return out
}

describe('Redis token vault', () => {
  it('keys a grant by upstream and principal inside a hash tag, and no value holds a token or record in the clear', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const vault = await replica(t, redis.url)
    const grant = grantWith('alice')
    await vault.put(ALICE, grant)
    await vault.records.set('state:s1', 'plain-state-value', 60_000)
    const values = await allValues(await admin(t, redis.url))
    assert.deepEqual([...values.keys()].sort(), ['sbtest:tokens:record:state%3As1', 'sbtest:tokens:{github:jwt%3Aalice}'])
    for (const value of values.values()) {
      assert.match(value, /^sb1\./)
      for (const secret of [grant.accessToken.reveal(), grant.refreshToken?.reveal() ?? 'unset', 'plain-state-value']) assert.ok(!value.includes(secret))
    }
  })

  it('any replica reads a grant another stored, and a record set with a TTL carries it in Redis', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const key = newKey()
    const a = await replica(t, redis.url, { keyring: new Keyring({ encryptionKey: key }) })
    const b = await replica(t, redis.url, { keyring: new Keyring({ encryptionKey: key }) })
    const grant = grantWith('alice')
    await a.put(ALICE, grant)
    assert.equal((await b.get(ALICE))?.accessToken.reveal(), grant.accessToken.reveal())
    await a.records.set('state:s', 'v', 60_000)
    const ttl = await (await admin(t, redis.url)).pttl('sbtest:tokens:record:state%3As')
    assert.ok(ttl > 0 && ttl <= 60_000, String(ttl))
    assert.equal(await b.records.take('state:s'), 'v')
    assert.equal(await a.records.take('state:s'), undefined)
  })

  it('re-seals a record of a previous key with the current key on read, keeping its TTL', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const oldKey = newKey()
    const old = await replica(t, redis.url, { keyring: new Keyring({ encryptionKey: oldKey }) })
    await old.put(ALICE, grantWith('alice'))
    await old.records.set('client:github', 'registration', 60_000)
    const current = new Keyring({ encryptionKey: newKey(), previousKeys: [oldKey] })
    const rotated = await replica(t, redis.url, { keyring: current })
    assert.notEqual(await rotated.get(ALICE), undefined)
    assert.equal(await rotated.records.get('client:github'), 'registration')
    const client = await admin(t, redis.url)
    assert.equal((await client.get('sbtest:tokens:{github:jwt%3Aalice}'))?.split('.')[1], current.kid)
    assert.equal((await client.get('sbtest:tokens:record:client%3Agithub'))?.split('.')[1], current.kid)
    assert.ok(await client.pttl('sbtest:tokens:record:client%3Agithub') > 0)
  })

  it('exclusive across two replicas: three concurrent holders never overlap, and a holder that throws releases the lock', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    // A lock left behind would make the next holder fail after lockWaitMs, not wait out the TTL.
    const options = { lockTtlMs: 30_000, lockWaitMs: 5000 }
    const a = await replica(t, redis.url, options)
    const b = await replica(t, redis.url, options)
    const events: string[] = []
    const hold = async (vault: RedisVault, i: number): Promise<number> => await vault.exclusive(ALICE, async () => {
      events.push(`enter ${i}`)
      await delay(30)
      events.push(`exit ${i}`)
      if (i === 1) throw new Error('the refresh failed')
      return i
    })
    const results = await bounded(Promise.allSettled([hold(a, 0), hold(b, 1), hold(a, 2), hold(b, 3)]), 'four holders', 10_000)
    assert.deepEqual(results.map(r => r.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
    assert.equal(events.length, 8)
    for (let i = 0; i < events.length; i += 2) assert.equal(events[i]?.replace('enter', 'exit'), events[i + 1], events.join(', '))
    assert.deepEqual(await (await admin(t, redis.url)).keys('*:lock'), [], 'every lock released')
  })

  it('does not release a lock another holder took after its own expired', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const a = await replica(t, redis.url, { lockTtlMs: 100, lockWaitMs: 5000 })
    const b = await replica(t, redis.url, { lockTtlMs: 30_000, lockWaitMs: 5000 })
    const client = await admin(t, redis.url)
    const lockKey = 'sbtest:tokens:{github:jwt%3Aalice}:lock'
    let bHolds: (() => void) | undefined
    let bInside: Promise<void> | undefined
    await a.exclusive(ALICE, async () => {
      // a outlives its lock; b takes the lock meanwhile.
      bInside = b.exclusive(ALICE, async () => { await new Promise<void>(resolve => { bHolds = resolve }) })
      await waitFor(() => bHolds !== undefined, 'b to take the expired lock', 5000)
    })
    assert.notEqual(await client.get(lockKey), null, 'b\'s lock survives a\'s release')
    bHolds?.()
    await bInside
    assert.equal(await client.get(lockKey), null)
  })

  it('Redis stopped: get throws SB_ERR_TOKEN_STORE_UNAVAILABLE at once and counts the fault; back up, it reads again', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const faults: string[] = []
    const key = newKey()
    const vault = await replica(t, redis.url, { keyring: new Keyring({ encryptionKey: key }), onFault: op => { faults.push(op) } })
    await vault.put(ALICE, grantWith('alice'))
    await redis.stop()
    const err = await bounded(vault.get(ALICE).then(() => undefined, (e: unknown) => e), 'get with Redis stopped')
    assert.ok(isSwitchboardError(err, 'SB_ERR_TOKEN_STORE_UNAVAILABLE'), String(err))
    assert.ok(faults.includes('get'))
    await assert.rejects(bounded(vault.put(ALICE, grantWith('again')), 'put with Redis stopped'), (e: unknown) => isSwitchboardError(e, 'SB_ERR_TOKEN_STORE_UNAVAILABLE'))
    await assert.rejects(bounded(vault.exclusive(ALICE, async () => 1), 'exclusive with Redis stopped'), (e: unknown) => isSwitchboardError(e, 'SB_ERR_TOKEN_STORE_UNAVAILABLE'))
    await redis.restart()
    await vault.connected()
    assert.equal(await vault.get(ALICE), undefined, 'the restarted Redis is empty')
  })

  it('Redis frozen: get throws SB_ERR_TOKEN_STORE_UNAVAILABLE within the command timeout, never hangs', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const faults: string[] = []
    const vault = await replica(t, redis.url, { onFault: op => { faults.push(op) } })
    redis.pause()
    t.after(() => { redis.resume() })
    await assert.rejects(bounded(vault.get(ALICE), 'get with Redis frozen'), (e: unknown) => isSwitchboardError(e, 'SB_ERR_TOKEN_STORE_UNAVAILABLE'))
    await assert.rejects(bounded(vault.list(), 'list with Redis frozen'), (e: unknown) => isSwitchboardError(e, 'SB_ERR_TOKEN_STORE_UNAVAILABLE'))
    assert.deepEqual(faults, ['get', 'list'])
  })
})
