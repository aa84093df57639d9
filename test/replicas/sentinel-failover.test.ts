import { test } from 'node:test'
import assert from 'node:assert/strict'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { redisOrSkip } from '../helpers/redis-server.ts'
import { SENTINEL_NAME, startSentinelTopology } from '../helpers/redis-sentinel.ts'
import { startReplicas, type Replica } from '../helpers/replicas.ts'
import { rawInitialize, rawPost, waitFor } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'
const ALICE = { authorization: `Bearer ${KEY}` }
const headersOf = (sessionId: string): Record<string, string> => ({ ...ALICE, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })

/** A tools/call of echo on one replica: 'ok' when it answered this very request, else what came back. */
async function echo (replica: Replica, sessionId: string, id: number, text: string): Promise<string> {
  const res = await rawPost(`${replica.baseUrl}/mcp`, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__echo', arguments: { text } } }, headersOf(sessionId))
  const body = await res.text()
  if (res.status !== 200) return `${replica.name} ${text}: ${res.status} ${body.slice(0, 200)}`
  const json = body.trimStart().startsWith('{') ? body : body.split('\n').filter(l => l.startsWith('data: ')).map(l => l.slice(6)).find(l => l.includes('"result"')) ?? '{}'
  const message = JSON.parse(json) as { id?: unknown, result?: { structuredContent?: { text?: unknown } } }
  return message.id === id && message.result?.structuredContent?.text === text ? 'ok' : `${replica.name} ${text}: ${json.slice(0, 200)}`
}

test('three replicas on a Sentinel-managed Redis: the primary SIGKILLed mid-load; every call of a known session on any replica answers its own request, and a session opened after the failover works on every replica', { timeout: 180_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const topology = await startSentinelTopology(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const prefix = `sr${Date.now()}`
  const replicas = await startReplicas(t, 3, {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    redis: { sentinels: topology.sentinels, name: SENTINEL_NAME, keyPrefix: prefix },
    sessions: { store: 'redis' },
    rateLimits: { store: 'redis', keyPrefix: `${prefix}:rl`, rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit: 100_000, windowMs: 60_000 }] },
    pinning: { store: 'redis', keyPrefix: `${prefix}:pins` },
    logLevel: 'info'
  })
  const sessions: string[] = []
  for (const replica of replicas) sessions.push((await rawInitialize(`${replica.baseUrl}/mcp`, '2025-11-25', ALICE)).sessionId)
  // Every replica learns every session from Redis before the kill, as a balancer spreading them would.
  for (const [s, id] of sessions.entries()) {
    for (const replica of replicas) assert.equal(await echo(replica, id, 1, `warm-${s}-${replica.name}`), 'ok')
  }

  const load = { stop: false }
  const answers: string[] = []
  const loops = sessions.map(async (id, s) => {
    for (let n = 2; !load.stop; n++) answers.push(await echo(replicas[n % replicas.length] as Replica, id, n, `s${s}-n${n}`))
  })
  await waitFor(() => answers.length >= 30, 'calls before the kill', 30_000)
  await topology.primary.kill()
  await waitFor(async () => await topology.primaryPort() === topology.replica.port, 'the sentinels to promote the replica', 30_000)
  const during = answers.length
  // Opened on one replica after the failover, then served by each of the others from the new primary.
  const fresh = await waitFor(async () => {
    const { sessionId } = await rawInitialize(`${(replicas[0] as Replica).baseUrl}/mcp`, '2025-11-25', ALICE)
    const results = await Promise.all(replicas.slice(1).map(async r => await echo(r, sessionId, 2, `fresh-${r.name}`)))
    if (results.every(r => r === 'ok')) return sessionId
    await new Promise(resolve => setTimeout(resolve, 250))
    return undefined
  }, 'a session opened after the failover served by every replica', 30_000)
  await waitFor(() => answers.length >= during + 30, 'calls after the failover', 30_000)
  load.stop = true
  await Promise.all(loops)

  assert.deepEqual(answers.filter(a => a !== 'ok'), [], `every call answered its own request (${answers.length} calls)`)
  for (const replica of replicas) assert.equal(await echo(replica, fresh, 3, `again-${replica.name}`), 'ok')
})
