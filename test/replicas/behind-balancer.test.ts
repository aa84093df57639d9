import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { haproxyOrSkip, SERVED_BY_HEADER, startHaproxy, type Haproxy } from '../helpers/haproxy.ts'
import { startReplicas, type Replica } from '../helpers/replicas.ts'
import { rawInitialize, waitFor } from '../helpers/start-gateway.ts'

const DRAIN_DELAY_MS = 1500

interface Served { status: number, by: string, reusedSocket: boolean }

/** One GET over `agent`, reporting which backend HAProxy chose and whether the client connection was reused. */
async function get (agent: Agent, url: string): Promise<Served> {
  return await new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume()
      res.once('end', () => {
        resolve({ status: res.statusCode ?? 0, by: String(res.headers[SERVED_BY_HEADER] ?? ''), reusedSocket: req.reusedSocket })
      })
    })
    req.once('error', reject)
    req.end()
  })
}

async function allUp (balancer: Haproxy, names: string[]): Promise<void> {
  await waitFor(async () => {
    const states = await balancer.serverStates()
    return names.every(n => states[n] === 'UP')
  }, `${names.join(', ')} to be UP in HAProxy`, 10_000)
}

function counts (served: Served[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const s of served) out[s.by] = (out[s.by] ?? 0) + 1
  return out
}

const backends = (replicas: Replica[]): Array<{ name: string, port: number }> => replicas.map(r => ({ name: r.name, port: r.port }))

test('round robin sends the requests of one keep-alive client connection to all three replicas in turn', async (t) => {
  if (!haproxyOrSkip(t)) return
  const replicas = await startReplicas(t, 3, { upstreams: [] })
  const balancer = await startHaproxy(t, backends(replicas))
  await allUp(balancer, replicas.map(r => r.name))

  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.after(() => { agent.destroy() })
  const served: Served[] = []
  for (let i = 0; i < 30; i++) served.push(await get(agent, `${balancer.url}/healthz`))

  assert.ok(served.every(s => s.status === 200), JSON.stringify(served))
  assert.ok(served.slice(1).every(s => s.reusedSocket), 'every request after the first went over the same client connection')
  assert.deepEqual(counts(served), { r0: 10, r1: 10, r2: 10 })
  for (let i = 1; i < served.length; i++) assert.notEqual(served[i]?.by, served[i - 1]?.by, 'no two requests in a row on the same replica')
})

test('SIGTERM with a drain delay: /readyz 503 at once, still serving, HAProxy takes the replica out, the call in flight finishes, exit 0', async (t) => {
  if (!haproxyOrSkip(t)) return
  const upstream = await startControllableHttpServer({ name: 'web' })
  t.after(() => upstream.close())
  const replicas = await startReplicas(t, 3, {
    upstreams: [{ name: 'web', transport: 'streamable-http', url: upstream.url }],
    shutdown: { drainDelayMs: DRAIN_DELAY_MS, graceMs: 5000 },
    logLevel: 'info'
  })
  const [leaving] = replicas
  assert.ok(leaving !== undefined)
  const names = replicas.map(r => r.name)
  const balancer = await startHaproxy(t, backends(replicas))
  // Sessions live on one replica until they are shared: the session-bound call goes through a
  // balancer of its own that has only the leaving replica behind it.
  const single = await startHaproxy(t, backends([leaving]))
  await Promise.all([allUp(balancer, names), allUp(single, [leaving.name])])

  const client = new Client({ name: 'drain-test', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${single.url}/mcp`)))
  t.after(async () => { await client.close().catch(() => {}) })
  // Runs past the drain delay, so it is still in flight when the listener closes, and ends within graceMs.
  const inFlight = client.callTool({ name: 'web__slow', arguments: { ms: DRAIN_DELAY_MS + 1000, steps: 2 } })

  // Stateless traffic through the three-replica balancer for the whole shutdown: none of it may fail.
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.after(() => { agent.destroy() })
  const load: Array<Served & { at: number }> = []
  const loadOver = new AbortController()
  const loader = (async () => {
    while (!loadOver.signal.aborted) {
      const at = Date.now()
      load.push({ ...await get(agent, `${balancer.url}/healthz`), at })
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  })()
  await waitFor(() => load.some(s => s.by === leaving.name), 'the leaving replica to serve balanced traffic')

  const signalledAt = Date.now()
  leaving.kill('SIGTERM')
  const readyz = await waitFor(async () => {
    const res = await fetch(`${leaving.baseUrl}/readyz`)
    return res.status === 503 ? await res.json() as unknown : undefined
  }, '/readyz to turn 503', 1000)
  const unreadyAfterMs = Date.now() - signalledAt
  assert.deepEqual(readyz, { status: 'draining' })
  assert.ok(unreadyAfterMs < DRAIN_DELAY_MS / 3, `/readyz turned 503 ${unreadyAfterMs} ms after SIGTERM`)

  // Still serving directly during the delay: liveness, and MCP (a new session included).
  assert.equal((await fetch(`${leaving.baseUrl}/healthz`)).status, 200)
  const { sessionId } = await rawInitialize(`${leaving.baseUrl}/mcp`)
  assert.ok(sessionId.length > 0)

  // Each balancer checks on its own schedule: both must notice before the listener closes.
  await waitFor(async () => (await balancer.serverStates())[leaving.name] === 'DOWN', 'HAProxy to mark the leaving replica DOWN', DRAIN_DELAY_MS)
  const downAt = Date.now()
  await waitFor(async () => (await single.serverStates())[leaving.name] === 'DOWN', 'the single-replica HAProxy to mark it DOWN', DRAIN_DELAY_MS)
  const bothDownAfterMs = Date.now() - signalledAt
  assert.ok(bothDownAfterMs < DRAIN_DELAY_MS, `marked DOWN ${bothDownAfterMs} ms after SIGTERM, before the listener closed`)

  const result = await inFlight as { content: Array<{ text: string }> }
  assert.equal(result.content[0]?.text, 'done', 'the call in flight finished')
  assert.equal(await leaving.exited, 0)
  const exitedAfterMs = Date.now() - signalledAt
  assert.ok(exitedAfterMs >= DRAIN_DELAY_MS, `exited ${exitedAfterMs} ms after SIGTERM, not before the drain delay`)
  // A little more traffic once it is gone, then stop.
  await new Promise(resolve => setTimeout(resolve, 300))
  loadOver.abort()
  await loader

  const failed = load.filter(s => s.status !== 200)
  assert.deepEqual(failed, [], 'every request through the balancer succeeded')
  const afterDown = load.filter(s => s.at > downAt)
  assert.ok(afterDown.length > 10, `traffic went on after the replica was taken out (${afterDown.length} requests)`)
  assert.ok(afterDown.every(s => s.by !== leaving.name), `nothing was sent to ${leaving.name} once DOWN: ${JSON.stringify(counts(afterDown))}`)
  assert.deepEqual(Object.keys(counts(afterDown)).sort(), ['r1', 'r2'])

  const msgs = leaving.logs.map(l => l.msg)
  assert.ok(msgs.some(m => m.startsWith('draining:')), msgs.join('\n'))
  assert.ok(msgs.includes('stopped'), msgs.join('\n'))
  assert.ok(replicas.slice(1).every(r => r.logs.every(l => l.msg !== 'shutting down')), 'the other replicas kept running')
})
