import { test } from 'node:test'
import assert from 'node:assert/strict'
import { MODERN } from '../helpers/modern-era.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { startReplicas } from '../helpers/replicas.ts'
import { metricValue, rawPost, scrapeMetrics } from '../helpers/start-gateway.ts'

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdef01' }
const SAMPLING_TOOL = 'everything__trigger-sampling-request'

interface Rpc { id?: unknown, result?: Record<string, unknown>, error?: { code: number, message: string, data?: Record<string, unknown> } }

async function call (baseUrl: string, who: keyof typeof KEYS, id: number, args: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<Rpc> {
  const res = await rawPost(`${baseUrl}/mcp`, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: SAMPLING_TOOL, arguments: args, ...extra, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } } }
  }, { authorization: `Bearer ${KEYS[who]}`, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': SAMPLING_TOOL })
  assert.equal(res.status, 200)
  return await res.json() as Rpc
}

test('across replicas: a retry forwarded to the replica where its call waits is checked there; another principal\'s, or one with other arguments, is -32602 and the owner\'s right retry still resumes the call', { timeout: 120_000 }, async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t)
  const [r0, r1] = await startReplicas(t, 2, {
    upstreams: [{ name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] }],
    auth: { apiKeys: [{ id: 'alice', key: KEYS.alice }, { id: 'bob', key: KEYS.bob }] },
    redis: { url: redis.url },
    sessions: { store: 'redis' },
    http: { modernClients: true },
    logLevel: 'info'
  })
  assert.ok(r0 !== undefined && r1 !== undefined)
  const first = await call(r0.baseUrl, 'alice', 1, { prompt: 'held on r0', maxTokens: 5 })
  assert.equal(first.result?.resultType, 'input_required')
  const requestState = first.result?.requestState as string
  const key = Object.keys(first.result?.inputRequests as object)[0] as string
  const inputResponses = { [key]: { role: 'assistant', model: 'm', content: { type: 'text', text: 'answered through r1' } } }

  const bob = await call(r1.baseUrl, 'bob', 2, { prompt: 'held on r0', maxTokens: 5 }, { inputResponses, requestState })
  assert.equal(bob.error?.code, -32602)
  assert.match(bob.error?.message ?? '', /another principal/)
  const otherArgs = await call(r1.baseUrl, 'alice', 3, { prompt: 'something else', maxTokens: 5 }, { inputResponses, requestState })
  assert.equal(otherArgs.error?.code, -32602)
  assert.match(otherArgs.error?.message ?? '', /arguments/)

  const done = await call(r1.baseUrl, 'alice', 4, { prompt: 'held on r0', maxTokens: 5 }, { inputResponses, requestState })
  assert.equal(done.id, 4)
  assert.equal(done.result?.resultType, 'complete')
  assert.match(JSON.stringify(done.result?.content), /answered through r1/)
  const owner = await scrapeMetrics(r0.baseUrl)
  assert.equal(metricValue(owner, 'switchboard_cross_replica_messages_total', { kind: 'retry', outcome: 'delivered' }), 3, 'each retry was checked on r0, where the call waited')
  assert.deepEqual(['asked', 'resumed', 'refused'].map(o => metricValue(owner, 'switchboard_input_required_total', { outcome: o })), [1, 1, 2])
})
