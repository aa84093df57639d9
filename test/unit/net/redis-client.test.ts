import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { closeRedisClient, createRedisClient } from '../../../src/net/redis-client.ts'
import { onRedisRevival, type RedisRevival } from '../../../src/net/redis-revival.ts'
import { redisOrSkip, startRedisServer } from '../../helpers/redis-server.ts'

describe('createRedisClient', () => {
  it('leaves resubscribing after a reconnect to its user: a SUBSCRIBE refused then is the user\'s to handle, never an unhandled rejection', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const unhandled: unknown[] = []
    const record = (reason: unknown): void => { unhandled.push(reason) }
    process.on('unhandledRejection', record)
    t.after(() => { process.off('unhandledRejection', record) })

    const admin = createRedisClient({ url: redis.url, commandTimeoutMs: 2000, connectionName: 'admin' })
    const subscriber = createRedisClient({ url: redis.url, commandTimeoutMs: 2000, connectionName: 'bus', queueWhileOffline: true })
    t.after(async () => { await Promise.all([closeRedisClient(admin), closeRedisClient(subscriber)]) })
    // Both connected first: neither queues a command while offline.
    await Promise.all([admin, subscriber].map(async client => { if (client.status !== 'ready') await once(client, 'ready') }))
    await subscriber.subscribe('sb:bus')

    // From now on the default user may not use any channel: a SUBSCRIBE sent by ioredis itself on
    // reconnecting would fail with nobody to catch it, and the process would die of it.
    await admin.call('ACL', 'SETUSER', 'default', 'resetchannels')
    const failures: unknown[] = []
    subscriber.on('ready', () => { subscriber.subscribe('sb:bus').catch((err: unknown) => { failures.push(err) }) })
    await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
    await once(subscriber, 'ready')
    for (let i = 0; i < 500 && failures.length === 0; i++) await new Promise(resolve => setTimeout(resolve, 20))
    assert.match(String(failures[0]), /NOPERM/, 'the user\'s own SUBSCRIBE ran and its refusal reached the user')
    await new Promise(resolve => setTimeout(resolve, 200))
    assert.deepEqual(unhandled.map(String), [])
  })

  it('connects again a client that ended without being closed (as ioredis does on a Sentinel failover mid-connect), reports it once, and leaves a closed one closed', async (t) => {
    if (!redisOrSkip(t)) return
    const redis = await startRedisServer(t)
    const revivals: RedisRevival[] = []
    t.after(onRedisRevival((event) => { revivals.push(event) }))
    const client = createRedisClient({ url: `redis://:hunter2@${new URL(redis.url).host}`, commandTimeoutMs: 2000, connectionName: 'sessions' })
    t.after(async () => { await closeRedisClient(client) })
    if (client.status !== 'ready') await once(client, 'ready')
    // What the failover leaves: the client's own disconnect() ends it, and ioredis would not reconnect.
    const ended = once(client, 'end')
    client.disconnect()
    await ended
    await once(client, 'ready')
    assert.equal(await client.ping(), 'PONG')
    assert.deepEqual(revivals.map(r => [r.connection, r.attempt]), [['sessions', 1]])
    assert.ok(revivals.every(r => !r.redis.includes('hunter2')), 'the password is not reported')

    await closeRedisClient(client)
    await new Promise(resolve => setTimeout(resolve, 300))
    assert.equal(client.status, 'end', 'a closed client stays closed')
    assert.equal(revivals.length, 1)
  })
})
