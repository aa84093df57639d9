import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { startRedisCluster } from '../helpers/redis-cluster.ts'
import { redisOrSkip } from '../helpers/redis-server.ts'
import { readEvents } from '../helpers/sse-events.ts'
import { metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// A cluster operator moves hash slots between primaries (resharding, a node added) while sessions
// are in use. Here the slots of one live session's keys (its record, its streams, the rate-limit
// window its calls count in) are moved to another primary as `redis-cli --cluster reshard` does
// (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE), while that session's calls run through two
// replicas. During the move the client meets ASK, then MOVED: none of that may reach a caller.
// (A slot left MIGRATING, or moved a key at a time, for longer than redis.timeoutMs is another
// matter: a stream append whose keys are apart meanwhile is answered TRYAGAIN until it times out,
// is counted and leaves a gap that a resume refuses, as in an outage; see docs/replicas.md.)

const KEY = 'alice-key-0123456789abcdef'
const ALICE = { authorization: `Bearer ${KEY}` }
const STAGE_MS = 150
const headersOf = (sessionId: string): Record<string, string> => ({ ...ALICE, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' })

async function node (t: TestContext, port: number): Promise<Redis> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0 })
  client.on('error', () => {})
  t.after(() => { client.disconnect() })
  await client.connect()
  return client
}

/** The port of the primary serving `slot`, from CLUSTER SLOTS as seen by `client`. */
async function ownerOf (client: Redis, slot: number): Promise<number> {
  const ranges = await client.call('CLUSTER', 'SLOTS') as Array<[number, number, [string, number, string]]>
  const range = ranges.find(([from, to]) => slot >= from && slot <= to)
  assert.ok(range !== undefined, `slot ${slot} is served`)
  return range[2][1]
}

/**
 * Moves one slot from its primary to `to` as `redis-cli --cluster reshard` does (its default
 * pipeline: up to 10 keys per MIGRATE, right after MIGRATING is set), then pauses with the keys
 * moved and the slot not yet reassigned, so calls meet ASK to the target, then MOVED. (While a slot
 * is MIGRATING, a script that creates a key there, such as a session's new stream next to its
 * existing set, is answered TRYAGAIN until the keys have moved: held for longer than redis.timeoutMs
 * it fails, as the comment at the top says.)
 */
async function migrateSlot (nodes: Map<number, Redis>, slot: number, from: number, to: number): Promise<number> {
  const src = nodes.get(from) as Redis
  const dst = nodes.get(to) as Redis
  const srcId = await src.call('CLUSTER', 'MYID') as string
  const dstId = await dst.call('CLUSTER', 'MYID') as string
  await dst.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', srcId)
  await src.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', dstId)
  let moved = 0
  for (;;) {
    const keys = await src.call('CLUSTER', 'GETKEYSINSLOT', slot, 10) as string[]
    if (keys.length === 0) break
    await src.call('MIGRATE', '127.0.0.1', to, '', 0, 5000, 'REPLACE', 'KEYS', ...keys)
    moved += keys.length
  }
  await sleep(STAGE_MS)
  for (const client of nodes.values()) await client.call('CLUSTER', 'SETSLOT', slot, 'NODE', dstId)
  return moved
}

interface Load { calls: number, streamed: number, wrong: string[] }

/** Calls of one session, alternately through each replica, until `stop()`: echoes with their own text, and streamed calls with progress (appended to the session's streams in Redis). */
async function runLoad (replicas: RunningGateway[], sessionId: string, stop: () => boolean, load: Load, lane: number): Promise<void> {
  for (let i = 0; !stop(); i++) {
    const gw = replicas[(i + lane) % replicas.length] as RunningGateway
    const id = lane * 1_000_000 + i + 10
    if (i % 4 === 3) {
      const res = await rawPost(gw.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__slow', arguments: { ms: 10, steps: 2 }, _meta: { progressToken: `p${id}` } } }, headersOf(sessionId))
      const events = res.status === 200 ? await readEvents(res, evs => evs.some(e => /"(result|error)"/.test(e.data))) : []
      // The stream opens with an empty priming event (its id only).
      const last = events.filter(e => e.data !== '').map(e => JSON.parse(e.data) as { id?: number, result?: { isError?: boolean }, error?: unknown }).find(m => m.result !== undefined || m.error !== undefined)
      if (last?.id !== id || last.result === undefined || last.result.isError === true) load.wrong.push(`streamed ${id}: ${res.status} ${JSON.stringify(events)}`)
      else load.streamed++
      continue
    }
    const text = `s-${lane}-${i}`
    const res = await rawPost(gw.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'web__echo', arguments: { text } } }, headersOf(sessionId))
    const body = await res.text()
    const json = body.trimStart().startsWith('{') ? body : body.split('\n').filter(l => l.startsWith('data: ')).map(l => l.slice(6)).find(l => /"(result|error)"/.test(l)) ?? '{}'
    const answer = JSON.parse(json) as { id?: number, result?: { structuredContent?: { text?: string } } }
    if (res.status !== 200 || answer.id !== id || answer.result?.structuredContent?.text !== text) load.wrong.push(`echo ${id}: ${res.status} ${body.slice(0, 300)}`)
    else load.calls++
  }
}

test('cluster: the slots of a live session\'s keys move to another primary while its calls run through two replicas; every call answered as its own, no CROSSSLOT, no store error', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const cluster = await startRedisCluster(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const prefix = `mig${Date.now()}`
  const config = JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    redis: { cluster: cluster.seeds, keyPrefix: prefix },
    sessions: { store: 'redis' },
    rateLimits: { store: 'redis', keyPrefix: `${prefix}:rl`, rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit: 1_000_000, windowMs: 60_000 }] }
  })
  const replicas: RunningGateway[] = []
  for (let i = 0; i < 2; i++) {
    const gw = await startGateway(t, config)
    await waitReady(gw)
    replicas.push(gw)
  }
  const nodes = new Map<number, Redis>()
  for (const n of cluster.nodes) nodes.set(n.port, await node(t, n.port))
  const any = nodes.values().next().value as Redis

  const { sessionId } = await rawInitialize((replicas[0] as RunningGateway).url, '2025-11-25', ALICE)
  // One of each call first, so the session's record, streams and rate-limit window all exist.
  const warm: Load = { calls: 0, streamed: 0, wrong: [] }
  let warmed = 0
  await runLoad(replicas, sessionId, () => warmed++ >= 8, warm, 0)
  assert.deepEqual(warm.wrong, [])

  const keys: string[] = []
  for (const client of nodes.values()) keys.push(...await client.keys(`${prefix}*`))
  const ours = keys.filter(k => k.includes(sessionId) || k.startsWith(`${prefix}:rl`))
  assert.ok(ours.some(k => k.includes(`{${sessionId}}`)), `the session's streams are in Redis: ${keys.join(' ')}`)
  assert.ok(ours.some(k => k.startsWith(`${prefix}:rl`)), `the rate-limit window is in Redis: ${keys.join(' ')}`)
  const slots = [...new Set(await Promise.all(ours.map(async k => await any.call('CLUSTER', 'KEYSLOT', k) as number)))]

  let done = false
  const load: Load = { calls: 0, streamed: 0, wrong: [] }
  const lanes = [0, 1, 2].map(async lane => { await runLoad(replicas, sessionId, () => done, load, lane + 1) })
  const moves: string[] = []
  try {
    for (const slot of slots) {
      const from = await ownerOf(any, slot)
      const to = [...nodes.keys()].find(p => p !== from) as number
      const moved = await migrateSlot(nodes, slot, from, to)
      moves.push(`slot ${slot} ${from} -> ${to} (${moved} keys)`)
      assert.equal(await ownerOf(any, slot), to)
    }
    // A few more rounds after the last move: the replicas now follow MOVED to the new owner.
    const after = load.calls + load.streamed
    while (load.calls + load.streamed < after + 30 && load.wrong.length === 0) await sleep(20)
  } finally {
    done = true
    await Promise.all(lanes)
  }
  assert.deepEqual(load.wrong, [], `moved: ${moves.join(', ')}`)
  assert.ok(load.calls > 0 && load.streamed > 0, `calls ran during the move: ${JSON.stringify(load)}`)
  // The keys now live on the new owners, and the session is still one session there.
  for (const k of ours) {
    const owner = await ownerOf(any, await any.call('CLUSTER', 'KEYSLOT', k) as number)
    assert.equal(await (nodes.get(owner) as Redis).exists(k), 1, `${k} on its new owner`)
  }
  for (const gw of replicas) {
    const metrics = await scrapeMetrics(gw.baseUrl)
    const errors = metrics.split('\n').filter(l => /^switchboard_(session_store|rate_limit_store)_errors_total/.test(l) && !/ 0$/.test(l))
    assert.deepEqual(errors, [], `no Redis operation failed (moved: ${moves.join(', ')})`)
    assert.equal(metricValue(metrics, 'switchboard_session_store_errors_total') ?? 0, 0)
    assert.deepEqual(gw.logs.filter(l => /CROSSSLOT|MOVED|ASK|TRYAGAIN/.test(JSON.stringify(l))), [])
  }
})
