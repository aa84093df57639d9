import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { startControllableHttpServer, type ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { haproxyOrSkip, startHaproxy } from '../helpers/haproxy.ts'
import { redisOrSkip, startRedisServer, type RedisServer } from '../helpers/redis-server.ts'
import { startReplicas } from '../helpers/replicas.ts'
import { startTcpGate } from '../helpers/tcp-gate.ts'
import { rawInitialize, rawPost, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'
const ALICE = { authorization: `Bearer ${KEY}` }
const SAFETY_MS = 10_000

const headersOf = (sessionId: string): Record<string, string> => ({ ...ALICE, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })
const echo = (id: number, text: string): Record<string, unknown> => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__echo', arguments: { text } } })

function configFor (redisUrl: string, upstream: ControllableServerHandle, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    redis: { url: redisUrl },
    sessions: { store: 'redis' },
    logLevel: 'info',
    ...extra
  }
}

async function upstreamFor (t: TestContext): Promise<ControllableServerHandle> {
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  return upstream
}

/** The names of the gateway's session connections Redis has now (CLIENT LIST). */
async function sessionConnections (redis: RedisServer, t: TestContext): Promise<string[]> {
  const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  t.after(() => { client.disconnect() })
  await client.connect()
  const list = await client.client('LIST') as string
  client.disconnect()
  return [...list.matchAll(/name=(switchboard-sessions-\S+)/g)].map(m => m[1] as string)
}

test('Redis restarted empty: every session a replica holds is served through the balancer at once, even while the replica holding it is still reconnecting', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t) || !haproxyOrSkip(t)) return
  const redis = await startRedisServer(t)
  const upstream = await upstreamFor(t)
  // A reaches Redis through a gate, so that it reconnects after B, as a replica later in its backoff would.
  const gate = await startTcpGate(t, redis.port)
  const [a] = await startReplicas(t, 1, configFor(`redis://127.0.0.1:${gate.port}`, upstream))
  const [b] = await startReplicas(t, 1, configFor(redis.url, upstream))
  if (a === undefined || b === undefined) throw new Error('two replicas')
  const balancer = await startHaproxy(t, [{ name: 'a', port: a.port }, { name: 'b', port: b.port }])
  await waitFor(async () => Object.values(await balancer.serverStates()).filter(s => s === 'UP').length === 2, 'both replicas UP in HAProxy', 15_000)
  const url = new URL('/mcp', balancer.url).href
  // Held by A only: B can learn them from Redis and nowhere else.
  const sessions: string[] = []
  for (let i = 0; i < 4; i++) sessions.push((await rawInitialize(`${a.baseUrl}/mcp`, '2025-11-25', ALICE)).sessionId)

  gate.close()
  await redis.restart()
  await waitFor(async () => (await sessionConnections(redis, t)).length === 1, 'B to reconnect to the emptied Redis', 15_000)
  const opening = setTimeout(() => { gate.open() }, 200)
  t.after(() => { clearTimeout(opening) })
  // Round robin: each session's requests land on both replicas; B's must wait for A's write-back, not 404.
  const statuses = await Promise.all(sessions.flatMap((id, i) => [0, 1].map(async (round) => {
    const res = await rawPost(url, echo(10 * i + round, `s${i}`), headersOf(id))
    return `${res.headers.get('x-served-by') ?? '?'}:${res.status}:${res.status === 200 ? '' : await res.text()}`
  })))
  assert.deepEqual(statuses.filter(s => !/:200:$/.test(s)), [], `every request succeeded: ${statuses.join(' ')}`)
  assert.ok(statuses.some(s => s.startsWith('b:')), `some landed on B: ${statuses.join(' ')}`)
})

/** Two replicas in this process on one Redis, in front of one upstream. */
async function pair (t: TestContext, extra: Record<string, unknown> = {}): Promise<{ redis: RedisServer, a: RunningGateway, b: RunningGateway } | undefined> {
  if (!redisOrSkip(t)) return undefined
  const redis = await startRedisServer(t)
  const upstream = await upstreamFor(t)
  const config = JSON.stringify({ ...configFor(redis.url, upstream, extra), logLevel: undefined, redis: { url: redis.url, keyPrefix: `t${Date.now()}` } })
  const a = await startGateway(t, config)
  const b = await startGateway(t, config)
  await waitReady(a)
  await waitReady(b)
  return { redis, a, b }
}

interface RefusalBody { error?: { code: number, message: string, data?: { 'switchboard/error'?: { code?: string } } } }

test('Redis unreachable: a replica that does not know the session answers 503 with Retry-After naming SB_ERR_SESSION_STORE_UNAVAILABLE, not 404; the replica holding it serves it', { timeout: 60_000 }, async (t) => {
  const ready = await pair(t)
  if (ready === undefined) return
  const { redis, a, b } = ready
  const { sessionId } = await rawInitialize(a.url, '2025-11-25', ALICE)
  await redis.kill()
  for (const attempt of [1, 2]) {
    const res = await rawPost(b.url, echo(attempt, 'x'), headersOf(sessionId))
    assert.equal(res.status, 503, `attempt ${attempt}: ${await res.clone().text()}`)
    assert.equal(res.headers.get('retry-after'), '1')
    const body = await res.json() as RefusalBody
    assert.equal(body.error?.data?.['switchboard/error']?.code, 'SB_ERR_SESSION_STORE_UNAVAILABLE', JSON.stringify(body))
  }
  assert.equal((await rawPost(a.url, echo(3, 'held'), headersOf(sessionId))).status, 200)
  await redis.restart()
  await waitFor(async () => (await rawPost(b.url, echo(4, 'back'), headersOf(sessionId))).status === 200, 'B to serve the session once Redis is back')
})

test('Redis frozen (SIGSTOP): a held session\'s tools/call with progress completes while Redis still does not answer; another replica answers 503 for it', { timeout: 60_000 }, async (t) => {
  const ready = await pair(t, { rateLimits: { store: 'redis', rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit: 1000, windowMs: 60_000 }] } })
  if (ready === undefined) return
  const { redis, a, b } = ready
  const { sessionId } = await rawInitialize(a.url, '2025-11-25', ALICE)
  assert.equal((await rawPost(a.url, echo(2, 'warm'), headersOf(sessionId))).status, 200)
  redis.pause()
  let resumed = false
  const resume = (): void => {
    if (resumed) return
    resumed = true
    redis.resume()
  }
  t.after(resume)
  const safety = setTimeout(resume, SAFETY_MS)
  try {
    const call = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 20, steps: 2 }, _meta: { progressToken: 'p' } } }
    const res = await rawPost(a.url, call, headersOf(sessionId))
    const text = await res.text()
    assert.equal(resumed, false, 'the call waited for Redis to come back')
    assert.equal(res.status, 200)
    assert.match(text, /notifications\/progress/)
    assert.match(text, /"result"/)
    const other = await rawPost(b.url, echo(4, 'x'), headersOf(sessionId))
    assert.equal(resumed, false, 'the lookup waited for Redis to come back')
    assert.equal(other.status, 503)
  } finally {
    clearTimeout(safety)
    resume()
  }
})
