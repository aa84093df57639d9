import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer, type ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { startRedisCluster } from '../helpers/redis-cluster.ts'
import { redisOrSkip } from '../helpers/redis-server.ts'
import { metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// shared-sessions.test.ts's cross-replica cases, on a three-primary Redis Cluster: the replicas'
// messages travel over sharded channels, the session's keys over several slots.

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean }

const KEY = 'alice-key-0123456789abcdef'

async function setup (t: TestContext): Promise<{ upstream: ControllableServerHandle, gateways: RunningGateway[] } | undefined> {
  if (!redisOrSkip(t)) return undefined
  const cluster = await startRedisCluster(t)
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const prefix = `cr${Date.now()}`
  const config = JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    // What is tested is delivery across slots and replicas, not Redis timeouts: a loaded CI machine
    // must not fail a save at the 250 ms default (seen failing 3 runs in 15 so at load 9).
    redis: { cluster: cluster.seeds, keyPrefix: prefix, timeoutMs: 2000 },
    sessions: { store: 'redis' },
    rateLimits: { store: 'redis', keyPrefix: `${prefix}:rl`, rules: [{ principals: ['*'], tools: ['*'], key: 'principal', limit: 100_000, windowMs: 60_000 }] },
    catalog: { listChangedDebounceMs: 20 }
  })
  const gateways: RunningGateway[] = []
  for (let i = 0; i < 2; i++) {
    const gw = await startGateway(t, config)
    await waitReady(gw)
    gateways.push(gw)
  }
  return { upstream, gateways }
}

/** An SDK client whose every HTTP request goes to the next replica in turn (round robin, no stickiness). */
async function balancedClient (t: TestContext, gateways: RunningGateway[], capabilities: Record<string, unknown> = {}): Promise<Client> {
  let next = 0
  const rr: typeof fetch = async (input, init) => {
    const gw = gateways[next++ % gateways.length] as RunningGateway
    const url = new URL(input instanceof Request ? input.url : String(input))
    return await fetch(new URL(url.pathname + url.search, gw.baseUrl), init)
  }
  const client = new Client({ name: 'balanced', version: '1' }, { capabilities })
  await client.connect(new StreamableHTTPClientTransport(new URL((gateways[0] as RunningGateway).url), { fetch: rr, requestInit: { headers: { authorization: `Bearer ${KEY}` } } }))
  t.after(async () => { await client.close().catch(() => {}) })
  return client
}

test('cluster: sampling, elicitation and roots replies and a cancellation that land on another replica reach the one running the call', { timeout: 90_000 }, async (t) => {
  const ready = await setup(t)
  if (ready === undefined) return
  const client = await balancedClient(t, ready.gateways, { sampling: {}, elicitation: { form: {} }, roots: {} })
  client.setRequestHandler('sampling/createMessage', (request) => {
    const first = request.params.messages[0]?.content
    const prompt = first !== undefined && !Array.isArray(first) && first.type === 'text' ? first.text : ''
    return { role: 'assistant', model: 'test-model', content: { type: 'text', text: `echo ${prompt}` } }
  })
  client.setRequestHandler('elicitation/create', () => ({ action: 'accept', content: { answer: 'forty-two' } }))
  client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///across', name: 'across' }] }))
  const { tools } = await client.listTools()
  assert.ok(tools.some(tool => tool.name === 'web__echo'))
  const progress: number[] = []
  await client.callTool({ name: 'web__slow', arguments: { ms: 30, steps: 3 } }, { onprogress: p => { progress.push(p.progress) } })
  assert.deepEqual(progress, [1, 2, 3])
  // With two replicas in turn, the reply POST always goes to the replica the call's POST did not.
  const sampled = await client.callTool({ name: 'web__ask', arguments: { prompt: 'across' } }) as ToolResult
  assert.equal(sampled.content[0]?.text, 'sampled: echo across')
  const elicited = await client.callTool({ name: 'web__elicit', arguments: {} }) as ToolResult
  assert.equal(elicited.content[0]?.text, 'elicited: accept {"answer":"forty-two"}')
  const roots = await client.callTool({ name: 'web__roots', arguments: {} }) as ToolResult
  assert.equal(roots.content[0]?.text, '[{"uri":"file:///across","name":"across"}]')

  const controller = new AbortController()
  const stalled = client.callTool({ name: 'web__stall', arguments: {} }, { signal: controller.signal })
  await waitFor(() => ready.gateways.some(gw => gw.gateway.sessions.inFlightCount() === 1), 'the stalled call to run')
  const before = ready.upstream.state.stats.cancelled
  controller.abort()
  await assert.rejects(stalled)
  await waitFor(() => ready.upstream.state.stats.cancelled > before, 'the upstream to be told the call was cancelled')
  await waitFor(() => ready.gateways.every(gw => gw.gateway.sessions.inFlightCount() === 0), 'no call left running')
  const published = await Promise.all(ready.gateways.map(async gw => await scrapeMetrics(gw.baseUrl)))
  const count = (kind: string, outcome: string): number => published.reduce((n, text) => n + (metricValue(text, 'switchboard_cross_replica_messages_total', { kind, outcome }) ?? 0), 0)
  assert.equal(count('response', 'published'), 3)
  assert.equal(count('response', 'delivered'), 3)
  assert.ok(count('cancel', 'delivered') >= 1)
  for (const text of published) {
    assert.deepEqual(text.split('\n').filter(l => /^switchboard_(session_store|rate_limit_store)_errors_total/.test(l) && !/ 0$/.test(l)), [], 'no Redis operation failed')
  }
  for (const gw of ready.gateways) assert.deepEqual(gw.logs.filter(l => JSON.stringify(l).includes('CROSSSLOT')), [])
})
