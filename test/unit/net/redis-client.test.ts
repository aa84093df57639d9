import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { closeRedisClient, createRedisClient } from '../../../src/net/redis-client.ts'
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
})
