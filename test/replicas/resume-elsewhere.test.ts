import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Redis } from 'ioredis'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { startReplicas, type Replica } from '../helpers/replicas.ts'
import { readEvents, type SseEvent } from '../helpers/sse-events.ts'
import { rawInitialize, rawPost, waitFor } from '../helpers/start-gateway.ts'

// A client drops a call's POST stream and resumes it with Last-Event-ID on a replica that does not
// run the call. Each replica is addressed directly, so the call runs on r0 and the resume lands on r1.

const KEY = 'alice-key-0123456789abcdef'
const CALL_ID = 'slow-call-7'

interface Cluster { replicas: Replica[], headers: Record<string, string>, redis: Awaited<ReturnType<typeof startRedisServer>> }

async function cluster (t: TestContext): Promise<Cluster> {
  const redis = await startRedisServer(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const replicas = await startReplicas(t, 2, {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url, timeoutMs: 30_000 }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    redis: { url: redis.url },
    sessions: { store: 'redis' },
    logLevel: 'info'
  })
  const alice = { authorization: `Bearer ${KEY}` }
  const [r0] = replicas as [Replica, Replica]
  const { sessionId } = await rawInitialize(`${r0.baseUrl}/mcp`, '2025-11-25', alice)
  return { replicas, redis, headers: { ...alice, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' } }
}

/** Starts `slow` on the replica with progress, reads its stream up to the first progress, then drops it; returns the last event id seen. */
async function startAndDrop (replica: Replica, headers: Record<string, string>, ms: number): Promise<string> {
  const res = await rawPost(`${replica.baseUrl}/mcp`, { jsonrpc: '2.0', id: CALL_ID, method: 'tools/call', params: { name: 'web__slow', arguments: { ms, steps: 3 }, _meta: { progressToken: 'p1' } } }, headers)
  assert.equal(res.status, 200)
  assert.equal(res.headers.get('content-type'), 'text/event-stream')
  const events = await readEvents(res, evs => evs.some(e => e.data.includes('notifications/progress')))
  const last = events.at(-1)
  assert.ok(last?.id !== undefined && last.data.includes('notifications/progress'), `the first progress arrived with an id: ${JSON.stringify(events)}`)
  return last.id
}

function answerOf (events: SseEvent[]): Record<string, unknown> | undefined {
  for (const e of events) {
    if (e.data === '') continue
    const message = JSON.parse(e.data) as Record<string, unknown>
    if ('result' in message || 'error' in message) return message
  }
  return undefined
}

/** Resumes on `replica` and reads the stream to its end, for 20 s at most (an open stream with no answer is the defect). */
async function resumeOn (replica: Replica, headers: Record<string, string>, lastEventId: string, opened?: () => Promise<void>): Promise<{ events: SseEvent[], ended: boolean }> {
  const res = await fetch(`${replica.baseUrl}/mcp`, { headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastEventId } })
  assert.equal(res.status, 200)
  await opened?.()
  const reader = (res.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  const events: SseEvent[] = []
  let buffer = ''
  let cancelled = false
  const stop = setTimeout(() => { cancelled = true; void reader.cancel() }, 20_000)
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const id = /^id: ?(.*)$/m.exec(block)?.[1]
        const data = block.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trimStart()).join('\n')
        if (data !== '') events.push(id === undefined ? { data } : { id, data })
      }
    }
  } catch {
    // Cancelled at the bound: the stream stayed open.
  } finally {
    clearTimeout(stop)
  }
  return { events, ended: !cancelled }
}

test('a POST stream dropped on one replica and resumed with Last-Event-ID on another delivers the rest of the call\'s progress and its answer there, then ends', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const { replicas: [r0, r1], headers } = await cluster(t) as Cluster & { replicas: [Replica, Replica] }
  const last = await startAndDrop(r0, headers, 1500)
  const { events, ended } = await resumeOn(r1, headers, last)
  const answer = answerOf(events)
  assert.ok(answer !== undefined, `the resumed stream carried the answer: ${JSON.stringify(events)}`)
  assert.ok(ended, 'the stream ends after the answer')
  assert.equal(answer.id, CALL_ID)
  assert.match(JSON.stringify(answer.result), /done/)
  const progress = events.filter(e => e.data.includes('notifications/progress'))
  assert.equal(progress.length, 2, `the two progress notifications after the one seen, once each: ${JSON.stringify(events)}`)
  const streamOf = (id: string | undefined): string | undefined => id?.slice(0, id.lastIndexOf('.'))
  for (const e of [...progress, events.find(x => x.data.includes('"result"'))]) assert.equal(streamOf(e?.id), streamOf(last), 'each event keeps its id in the resumed stream')
})

test('a POST stream whose call was in the event store only up to its first progress is still answered on another replica after Redis lost every stored event', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const { replicas: [r0, r1], headers, redis } = await cluster(t) as Cluster & { replicas: [Replica, Replica] }
  const last = await startAndDrop(r0, headers, 2000)
  // Emptied, not restarted: the sessions stay readable, the stream's events are gone.
  const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  t.after(() => { client.disconnect() })
  await client.connect()
  const stored = await client.keys('*:events:*')
  assert.ok(stored.length > 0, 'the stream\'s events were in Redis')
  await client.del(...stored)
  const resumed = await resumeOn(r1, headers, last)
  const answer = answerOf(resumed.events)
  assert.ok(answer !== undefined, `the resumed stream carried the answer: ${JSON.stringify(resumed.events)}`)
  assert.equal(answer.id, CALL_ID)
  assert.ok('result' in answer)
})

test('a POST stream resumed on another replica after its call finished gets the answer even when Redis lost the stream\'s events meanwhile', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const { replicas: [r0, r1], headers, redis } = await cluster(t) as Cluster & { replicas: [Replica, Replica] }
  const last = await startAndDrop(r0, headers, 300)
  await waitFor(() => r0.logs.some(l => l.component === 'audit' && l.tool === 'web__slow' && l.outcome === 'ok'), 'the call to finish on r0')
  const client = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  t.after(() => { client.disconnect() })
  await client.connect()
  const stored = await client.keys('*:events:*')
  if (stored.length > 0) await client.del(...stored)
  const resumed = await resumeOn(r1, headers, last)
  const answer = answerOf(resumed.events)
  assert.ok(answer !== undefined && 'result' in answer, `the resumed stream carried the answer: ${JSON.stringify(resumed.events)}`)
  assert.equal(answer.id, CALL_ID)
  assert.ok(resumed.ended)
})

test('a POST stream resumed on another replica after the replica running its call was SIGKILLed gets a -32603 SB_ERR_CALL_LOST error for that request id, then ends (never an open stream with no answer)', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const { replicas: [r0, r1], headers } = await cluster(t) as Cluster & { replicas: [Replica, Replica] }
  const last = await startAndDrop(r0, headers, 20_000)
  r0.kill('SIGKILL')
  assert.equal(await r0.exited, 'SIGKILL')
  const { events, ended } = await resumeOn(r1, headers, last)
  const answer = answerOf(events) as { id?: unknown, error?: { code: number, message: string, data?: Record<string, { code?: string }> } } | undefined
  assert.ok(answer?.error !== undefined, `the resumed stream carried an error: ${JSON.stringify(events)}`)
  assert.equal(answer.id, CALL_ID)
  assert.equal(answer.error.code, -32603)
  assert.equal(answer.error.data?.['switchboard/error']?.code, 'SB_ERR_CALL_LOST')
  assert.match(answer.error.message, /may or may not have taken effect/)
  assert.ok(ended, 'the stream ends after the error')
})

test('a POST stream followed on another replica gets a -32603 SB_ERR_CALL_LOST error for its request id when the replica running the call is SIGKILLed meanwhile', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const { replicas: [r0, r1], headers } = await cluster(t) as Cluster & { replicas: [Replica, Replica] }
  const last = await startAndDrop(r0, headers, 20_000)
  const { events, ended } = await resumeOn(r1, headers, last, async () => {
    r0.kill('SIGKILL')
    assert.equal(await r0.exited, 'SIGKILL')
  })
  const answer = answerOf(events) as { id?: unknown, error?: { code: number, data?: Record<string, { code?: string }> } } | undefined
  assert.ok(answer?.error !== undefined, `the resumed stream carried an error: ${JSON.stringify(events)}`)
  assert.equal(answer.id, CALL_ID)
  assert.equal(answer.error.code, -32603)
  assert.equal(answer.error.data?.['switchboard/error']?.code, 'SB_ERR_CALL_LOST')
  assert.ok(ended, 'the stream ends after the error')
})
