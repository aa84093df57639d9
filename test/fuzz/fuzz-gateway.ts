// The gateway the fuzz tests attack, the control session that must keep working through it, and the
// checks made after a run: still alive, nothing left in flight.
import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import type { Client } from '@modelcontextprotocol/client'
import { startControllableServer } from '../fixtures/controllable-server.ts'
import { startModernHttpServer } from '../fixtures/modern-http-server.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

/** The controllable fixture over stdio named `up`, behind a concurrency cap so its in-flight gauge exists. */
export function controllableUpstream (name: string): Record<string, unknown> {
  const { command, args } = fixtureCommand(['--name', name])
  return { name, transport: 'stdio', command, args, timeoutMs: 5_000, concurrency: { limit: 64, maxQueued: 64 } }
}

/** `config`: more of the gateway's config (e.g. an `http` section). */
/** The upstreams of the downstream fuzz, by the prefix the messages use, and their transports. */
export const FUZZ_UPSTREAMS = { up: 'stdio', web: 'streamable-http', sse: 'sse', ws: 'websocket', modern: 'streamable-http' } as const

/**
 * The gateway the downstream fuzz attacks: the controllable fixture as `up` over stdio, and in this
 * process as `web` over Streamable HTTP, `sse` over legacy SSE, `ws` over WebSocket, and a 2026-07-28
 * server as `modern`, so mutated messages reach every kind of upstream transport and both eras.
 */
export async function startDownstreamFuzzGateway (t: TestContext): Promise<RunningGateway> {
  const network = await Promise.all((['web', 'sse', 'ws'] as const).map(async (name) => {
    const transport = FUZZ_UPSTREAMS[name]
    const server = await startControllableServer(transport === 'streamable-http' ? 'http' : transport, { name })
    t.after(() => server.close())
    return { name, transport, url: server.url, timeoutMs: 5_000, concurrency: { limit: 64, maxQueued: 64 }, ...(name === 'web' ? { protocol: '2025-11-25' } : {}) }
  }))
  // A 2026-07-28 upstream: requests go with the envelope in _meta, the method, name and mirrored arguments in headers.
  const modern = await startModernHttpServer()
  t.after(modern.close)
  return await startFuzzGateway(t, [controllableUpstream('up'), ...network, { name: 'modern', transport: 'streamable-http', url: modern.url, timeoutMs: 5_000, concurrency: { limit: 64, maxQueued: 64 } }])
}

/**
 * Every upstream's reconnections so far, by name, once every upstream is ready: a reconnection still
 * under way (after an earlier message took one away) would be counted against the next message.
 */
export async function reconnectsOf (gw: RunningGateway): Promise<Record<string, number>> {
  const ready = (): boolean => gw.gateway.pool.status().every(u => u.state === 'ready')
  if (!ready()) await waitFor(ready, 'every upstream to be ready again', 15_000)
  return Object.fromEntries(gw.gateway.pool.status().map(u => [u.name, u.reconnects]))
}

/**
 * No upstream was taken for lost (restarted, reconnected) because of what clients sent: since
 * `before` (checked after each message, so a failure shrinks to the message that did it), or at all.
 */
export function assertNoUpstreamLost (gw: RunningGateway, before: Record<string, number> = {}, what = 'the fuzz run'): void {
  for (const u of gw.gateway.pool.status()) {
    const why = `upstream ${u.name} was taken for lost after ${what} (state ${u.state}, last error: ${u.lastError ?? 'none'})`
    assert.equal(u.state, 'ready', why)
    assert.equal(u.reconnects, before[u.name] ?? 0, why)
  }
}

export async function startFuzzGateway (t: TestContext, upstreams: Array<Record<string, unknown>>, config: Record<string, unknown> = {}): Promise<RunningGateway> {
  const gw = await startGateway(t, JSON.stringify({ logLevel: 'info', ...config, upstreams }))
  await waitReady(gw)
  return gw
}

/** A well-behaved SDK client in a session of its own, calling each of `tools` (echoes) to prove the gateway still serves others. */
export async function controlSession (t: TestContext, gw: RunningGateway, ...tools: string[]): Promise<() => Promise<void>> {
  const client: Client = await connectClient(t, gw.url)
  let n = 0
  return async () => {
    for (const tool of tools) {
      const text = `control ${++n}`
      const result = await client.callTool({ name: tool, arguments: { text } })
      assert.notEqual(result.isError, true, `the control session's ${tool} failed: ${JSON.stringify(result)}`)
      assert.match(JSON.stringify(result.content), new RegExp(text), `the control session's ${tool} answered something else: ${JSON.stringify(result)}`)
    }
  }
}

/** Log lines that mean the gateway met something it did not expect: a bug, whatever the client sent. */
const UNEXPECTED = /unexpected|unhandled|uncaught|^request failed$/i

/** The error-level log lines of the run, by message (for the test's diagnostics). */
export function errorLogs (gw: RunningGateway): string {
  const counts = new Map<string, number>()
  for (const line of gw.logs) if (line.level >= 50) counts.set(line.msg, (counts.get(line.msg) ?? 0) + 1)
  return [...counts].map(([msg, n]) => `${msg} ×${n}`).join('; ') || 'none'
}

/** The gateway answers /healthz, logged nothing unexpected, and once the fuzzing stops nothing stays in flight anywhere. */
export async function assertHealthyAndDrained (gw: RunningGateway, upstreams: readonly string[]): Promise<void> {
  const unexpected = gw.logs.filter(l => l.level >= 50 && UNEXPECTED.test(l.msg))
  assert.deepEqual(unexpected.map(l => JSON.stringify(l).slice(0, 600)), [], 'error-level log lines of something unexpected')
  const health = await fetch(`${gw.baseUrl}/healthz`)
  assert.equal(health.status, 200, '/healthz after the fuzz run')
  // Bounded: a call the fuzz left running (e.g. an SSE answer dropped mid-way) ends within its timeout.
  await waitFor(() => gw.gateway.sessions.inFlightCount() === 0 && gw.gateway.pool.status().every(u => u.inFlight === 0), 'every in-flight call to end', 15_000)
    .catch(() => {
      assert.fail(`calls still in flight after the fuzz run: sessions ${gw.gateway.sessions.inFlightCount()}, upstreams ${JSON.stringify(gw.gateway.pool.status().map(u => [u.name, u.inFlight]))}`)
    })
  // A listen stream the test dropped is let go of when its connection closes; a 2026-07-28 call left
  // waiting for a retry (input_required) is given up after http.inputRequired.ttlMs.
  for (const gauge of ['switchboard_listens_active', 'switchboard_input_required_pending']) {
    await waitFor(async () => metricValue(await scrapeMetrics(gw.baseUrl), gauge) === 0, `${gauge} to come back to 0`, 15_000)
      .catch(async () => { assert.fail(`${gauge} is ${metricValue(await scrapeMetrics(gw.baseUrl), gauge)} after the fuzz run`) })
  }
  const metrics = await scrapeMetrics(gw.baseUrl)
  for (const upstream of upstreams) {
    assert.equal(metricValue(metrics, 'switchboard_upstream_calls_in_flight', { upstream }), 0, `switchboard_upstream_calls_in_flight{upstream="${upstream}"}`)
    assert.equal(metricValue(metrics, 'switchboard_upstream_calls_queued', { upstream }), 0, `switchboard_upstream_calls_queued{upstream="${upstream}"}`)
  }
}
