import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { startRedisServer, redisOrSkip } from '../helpers/redis-server.ts'
import { startGateway, waitFor, type LogLine, type RunningGateway } from '../helpers/start-gateway.ts'

const ERROR = 50
const REFUSED = /Redis refused the gateway's credentials/

function refusals (gw: RunningGateway): LogLine[] {
  return gw.logs.filter(line => line.level === ERROR && REFUSED.test(line.msg))
}

test('a wrong Redis password is logged at error once per outage, without the password, and again after a recovery', { timeout: 60_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const right = `right-${randomBytes(8).toString('hex')}`
  const wrong = `wrong-${randomBytes(8).toString('hex')}`
  const redis = await startRedisServer(t, { password: right })
  // The operator's own connection, with the right password: counts connections, changes the password.
  const admin = new Redis({ host: '127.0.0.1', port: redis.port, password: right, lazyConnect: true, maxRetriesPerRequest: 1 })
  t.after(() => { admin.disconnect() })
  await admin.connect()
  const connections = async (): Promise<number> => Number(/total_connections_received:(\d+)/.exec(await admin.info('stats'))?.[1])

  const gw = await startGateway(t, JSON.stringify({ upstreams: [], sessions: { store: 'redis' }, redis: { url: `redis://:${wrong}@127.0.0.1:${redis.port}` } }))
  await waitFor(() => refusals(gw).length > 0 || undefined, 'the error line')
  // Several more refused reconnects of every connection: still one line.
  const seen = await connections()
  await waitFor(async () => (await connections()) >= seen + 6 || undefined, 'more refused reconnects', 20_000)
  const first = refusals(gw)
  assert.equal(first.length, 1, JSON.stringify(first))
  assert.match(JSON.stringify(first[0]), /WRONGPASS/)

  // The operator makes the password the gateway has: every connection gets in, the outage ends.
  await admin.config('SET', 'requirepass', wrong)
  await waitFor(() => gw.logs.some(line => /accepted the gateway's credentials again/.test(line.msg)) || undefined, 'the recovery line', 20_000)

  // Then the password changes under it and its connections drop: a new outage, a new line.
  await admin.config('SET', 'requirepass', right)
  await admin.call('CLIENT', 'KILL', 'TYPE', 'normal')
  await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
  await waitFor(() => refusals(gw).length === 2 || undefined, 'the second error line', 20_000)

  const text = JSON.stringify(gw.logs)
  for (const secret of [right, wrong]) assert.ok(!text.includes(secret), 'a Redis password is logged')
})
