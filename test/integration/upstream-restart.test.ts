import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { descendants } from '../helpers/descendants.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

// A stdio upstream that crashes and is restarted: the crash is one failure of its circuit breaker,
// not one per call it cut; its tools stay listed while it restarts; a call made meanwhile waits for
// the restart (within its timeout) instead of meeting "Unknown tool".

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, unknown> }

function config (upstreams: unknown[]): string {
  return JSON.stringify({ upstreams, catalog: { listChangedDebounceMs: 20 } })
}

function errorOf (result: ToolResult): Record<string, unknown> | undefined {
  return result._meta?.['switchboard/error'] as Record<string, unknown> | undefined
}

/**
 * The fixture behind `sh`, which sleeps `restartDelayS` before every start but the first: a restart
 * that takes that long, so that a test can act inside the window.
 */
async function slowRestarting (t: TestContext, name: string, restartDelayS: number): Promise<{ command: string, args: string[] }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sb-restart-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const fixture = fixtureCommand(['--name', name])
  const script = `if [ -e "$1" ]; then sleep ${restartDelayS}; fi; touch "$1"; shift; exec "$@"`
  return { command: 'sh', args: ['-c', script, 'sh', path.join(dir, 'started'), fixture.command, ...fixture.args] }
}

/** The fixture process serving `name` (the gateway runs in this process, so it is our descendant). */
function fixturePid (name: string): number | undefined {
  return descendants(process.pid).find(p => p.args.some(a => a.endsWith('controllable-server.ts')) && p.args.includes(name))?.pid
}

test('a crash that cuts more calls than the failure threshold is one failure: the circuit stays closed and the next call succeeds', async (t) => {
  const stdio = fixtureCommand(['--name', 'fragile'])
  const gw = await startGateway(t, config([{ name: 'fragile', transport: 'stdio', command: stdio.command, args: stdio.args, circuitBreaker: { failureThreshold: 3, cooldownMs: 60_000 } }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const connection = gw.gateway.pool.get('fragile')
  const cut = Array.from({ length: 6 }, async () => await client.callTool({ name: 'fragile__stall', arguments: {} }) as ToolResult)
  await waitFor(() => (connection?.activeCalls.size ?? 0) >= 6, 'six calls in flight')
  const crash = await client.callTool({ name: 'fragile__crash', arguments: {} }) as ToolResult
  assert.equal(crash.isError, true)
  for (const result of await Promise.all(cut)) assert.equal(errorOf(result)?.code, 'SB_ERR_UPSTREAM_CLOSED')

  await waitFor(() => connection?.state === 'ready', 'the restart', 20_000)
  assert.equal(gw.gateway.pool.breaker('fragile')?.state, 'closed')
  const after = await client.callTool({ name: 'fragile__whoami', arguments: {} }) as ToolResult
  assert.equal(after.isError, undefined, JSON.stringify(after))
  assert.equal(after.content[0]?.text, 'fragile')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_transitions_total', { upstream: 'fragile', to: 'open' }) ?? 0, 0)
  assert.equal(metricValue(metrics, 'switchboard_circuit_breaker_rejections_total', { upstream: 'fragile' }), 0)
})

test('while a crashed upstream restarts its tools stay listed without list_changed, and a call made meanwhile waits and succeeds', async (t) => {
  const stdio = await slowRestarting(t, 'fragile', 1.5)
  const gw = await startGateway(t, config([{ name: 'fragile', transport: 'stdio', command: stdio.command, args: stdio.args, connectTimeoutMs: 20_000 }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const changes: string[] = []
  for (const kind of ['tools', 'prompts', 'resources'] as const) {
    client.setNotificationHandler(`notifications/${kind}/list_changed`, () => { changes.push(kind) })
  }
  const before = (await client.listTools()).tools.map(x => x.name).sort()
  const prompts = (await client.listPrompts()).prompts.map(x => x.name).sort()
  assert.ok(before.includes('fragile__whoami'))
  await client.callTool({ name: 'fragile__crash', arguments: {} })
  const connection = gw.gateway.pool.get('fragile')
  await waitFor(() => connection?.state !== 'ready', 'the crash to be noticed')

  assert.deepEqual((await client.listTools()).tools.map(x => x.name).sort(), before, 'the tools are listed during the restart')
  assert.deepEqual((await client.listPrompts()).prompts.map(x => x.name).sort(), prompts, 'and the prompts')
  assert.notEqual(connection?.state, 'ready', 'still restarting')
  const during = await client.callTool({ name: 'fragile__whoami', arguments: {} }) as ToolResult
  assert.equal(during.isError, undefined, JSON.stringify(during))
  assert.equal(during.content[0]?.text, 'fragile')
  assert.equal(connection?.state, 'ready')
  // Any list_changed from the restart was scheduled when the connection turned ready. Two later
  // changes of our own, each awaited, flush everything before them down the same stream (the first
  // a prompt, so that a stray tools/list_changed sharing its debounce window still shows).
  await client.callTool({ name: 'fragile__add_prompt', arguments: { name: 'marker' } })
  await waitFor(() => changes.includes('prompts'), 'the first marker\'s prompts/list_changed')
  await client.callTool({ name: 'fragile__add_tool', arguments: { name: 'marker' } })
  await waitFor(() => changes.at(-1) === 'tools', 'the second marker\'s tools/list_changed')
  assert.deepEqual(changes, ['prompts', 'tools'], 'a restart with the same lists changes nothing for clients: only the markers were announced')
})

test('a call made while the upstream restarts slower than the call\'s timeout gets SB_ERR_UPSTREAM_UNAVAILABLE, never Unknown tool', async (t) => {
  const stdio = await slowRestarting(t, 'sluggish', 4)
  const gw = await startGateway(t, config([{
    name: 'sluggish', transport: 'stdio', command: stdio.command, args: stdio.args, connectTimeoutMs: 30_000, tools: { timeoutMs: { whoami: 600 } }
  }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  await client.callTool({ name: 'sluggish__crash', arguments: {} })
  const connection = gw.gateway.pool.get('sluggish')
  await waitFor(() => connection?.state !== 'ready', 'the crash to be noticed')
  const during = await client.callTool({ name: 'sluggish__whoami', arguments: {} }) as ToolResult
  assert.equal(during.isError, true)
  assert.equal(errorOf(during)?.code, 'SB_ERR_UPSTREAM_UNAVAILABLE')
  assert.match(during.content[0]?.text ?? '', /not connected/)
  await waitFor(() => connection?.state === 'ready', 'the slow restart to finish', 30_000)
  const after = await client.callTool({ name: 'sluggish__whoami', arguments: {} }) as ToolResult
  assert.equal(after.content[0]?.text, 'sluggish')
})

test('after a SIGKILL of a stdio upstream the next call waits for the restart and succeeds (time to first success in the diagnostics)', async (t) => {
  const stdio = fixtureCommand(['--name', 'killed'])
  const gw = await startGateway(t, config([{ name: 'killed', transport: 'stdio', command: stdio.command, args: stdio.args }]))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const samples: number[] = []
  for (let round = 0; round < 3; round++) {
    const pid = await waitFor(() => gw.gateway.pool.get('killed')?.state === 'ready' && fixturePid('killed'), 'the fixture process')
    const killed = performance.now()
    process.kill(pid, 'SIGKILL')
    await waitFor(() => gw.gateway.pool.get('killed')?.state !== 'ready', 'the kill to be noticed')
    const result = await client.callTool({ name: 'killed__whoami', arguments: {} }) as ToolResult
    assert.equal(result.content[0]?.text, 'killed', JSON.stringify(result))
    samples.push(performance.now() - killed)
    assert.equal(gw.gateway.pool.breaker('killed')?.state, 'closed')
  }
  t.diagnostic(`SIGKILL to first successful call: ${samples.map(ms => `${ms.toFixed(0)} ms`).join(', ')}`)
})
