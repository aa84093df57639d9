import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { descendants } from '../helpers/descendants.ts'
import { freePort } from '../helpers/free-port.ts'
import { isAlive } from '../helpers/process-alive.ts'
import { startReplicas, type Replica } from '../helpers/replicas.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { metricValue, scrapeMetrics, waitFor } from '../helpers/start-gateway.ts'

interface ToolResult { content: Array<{ text?: string }>, isError?: boolean, _meta?: Record<string, { code?: string }> }

const ALICE = 'alice-key-0123456789abcdef'
const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const env = { ...process.env, ALICE_KEY: ALICE, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN }

function stdio (name: string): Record<string, unknown> {
  return { name, transport: 'stdio', ...fixtureCommand(['--name', name]) }
}

/* eslint-disable no-template-curly-in-string -- the config's own ${VAR} syntax */
function baseConfig (adminPort: number): Record<string, unknown> {
  return {
    upstreams: [stdio('keep'), stdio('gone'), stdio('tuned')],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }] },
    catalog: { listChangedDebounceMs: 20 },
    admin: { listen: { host: '127.0.0.1', port: adminPort }, token: '${SWITCHBOARD_ADMIN_TOKEN}' },
    logLevel: 'info'
  }
}
/* eslint-enable no-template-curly-in-string */

/** The config file as the replica helper wrote it (listen filled in), with `change` applied. */
function rewrite (gw: Replica, config: Record<string, unknown>): void {
  writeFileSync(gw.configFile, JSON.stringify({ ...config, listen: { host: '127.0.0.1', port: gw.port } }))
}

function upstreamPid (gw: Replica, name: string): number | undefined {
  return descendants(gw.pid).find(p => p.args.includes('--name') && p.args[p.args.indexOf('--name') + 1] === name && p.args.some(a => a.endsWith('controllable-server.ts')))?.pid
}

async function reloads (gw: Replica, outcome: string): Promise<number> {
  return metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_config_reloads_total', { outcome }) ?? 0
}

async function start (t: TestContext, args: string[] = []): Promise<{ gw: Replica, config: Record<string, unknown>, admin: string }> {
  const adminPort = await freePort()
  const config = baseConfig(adminPort)
  const [gw] = await startReplicas(t, 1, config, env, args)
  return { gw: gw as Replica, config, admin: `http://127.0.0.1:${adminPort}` }
}

async function connect (t: TestContext, gw: Replica): Promise<{ client: Client, transport: StreamableHTTPClientTransport, changes: () => number }> {
  const client = new Client({ name: 'reload-test', version: '1' })
  let changes = 0
  client.setNotificationHandler('notifications/tools/list_changed', () => { changes++ })
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', gw.baseUrl), { requestInit: { headers: { authorization: `Bearer ${ALICE}` } } })
  await client.connect(transport)
  t.after(async () => { await client.close().catch(() => {}) })
  return { client, transport, changes: () => changes }
}

test('SIGHUP applies an edited config under a live session: upstreams added, removed and changed, a deny rule, the unchanged upstream and its call untouched', { timeout: 90_000 }, async (t) => {
  const { gw, config } = await start(t)
  const { client, transport, changes } = await connect(t, gw)
  const sessionId = transport.sessionId
  await waitFor(() => upstreamPid(gw, 'keep') !== undefined && upstreamPid(gw, 'gone') !== undefined, 'both upstream processes')
  const keepPid = upstreamPid(gw, 'keep') as number
  const gonePid = upstreamPid(gw, 'gone') as number
  const tunedPid = await waitFor(() => upstreamPid(gw, 'tuned'), 'the tuned upstream\'s process')
  assert.equal(((await client.callTool({ name: 'keep__add', arguments: { a: 1, b: 2 } })) as ToolResult).isError, undefined)
  const inFlight = client.callTool({ name: 'keep__slow', arguments: { ms: 1500 } })

  rewrite(gw, {
    ...config,
    upstreams: [stdio('keep'), stdio('fresh'), { ...stdio('tuned'), timeoutMs: 5000 }],
    policies: { default: 'allow', rules: [{ principals: ['alice'], tools: ['keep__add'], effect: 'deny' }] }
  })
  gw.kill('SIGHUP')
  await waitFor(async () => (await reloads(gw, 'ok')) === 1, 'the reload to be counted')
  await waitFor(() => changes() >= 1, 'tools/list_changed', 15_000)
  const names = await waitFor(async () => {
    const tools = (await client.listTools()).tools.map(tool => tool.name)
    return tools.includes('fresh__echo') ? tools : undefined
  }, 'the new upstream\'s tools', 15_000)
  assert.ok(!names.some(n => n.startsWith('gone__')), 'the removed upstream\'s tools are gone')
  assert.ok(!names.includes('keep__add'), 'the denied tool is no longer listed')
  // A denied tool is invisible: calling it is calling a tool that does not exist.
  await assert.rejects(client.callTool({ name: 'keep__add', arguments: { a: 1, b: 2 } }), /Unknown tool: keep__add/, 'the new deny rule is in force')
  await waitFor(() => !isAlive(gonePid), 'the removed upstream\'s process to end')
  assert.equal(upstreamPid(gw, 'keep'), keepPid, 'the unchanged upstream kept its process')
  await waitFor(() => !isAlive(tunedPid) && upstreamPid(gw, 'tuned') !== undefined, 'the changed upstream to reconnect with a new process')
  assert.ok(isAlive(keepPid))
  const slow = await inFlight as ToolResult
  assert.equal(slow.isError, undefined, `the call in flight on the unchanged upstream finished: ${JSON.stringify(slow)}`)
  assert.equal(transport.sessionId, sessionId, 'the same session')
  assert.equal(((await client.callTool({ name: 'fresh__echo', arguments: { text: 'hi' } })) as ToolResult).content[0]?.text, 'hi')
  assert.equal(changes(), 1, 'list_changed once for the whole reload')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_config_last_reload_successful'), 1)
  assert.ok((metricValue(metrics, 'switchboard_config_last_reload_success_timestamp_seconds') ?? 0) > Date.now() / 1000 - 60)
})

test('an invalid file changes nothing: every error path logged, last_reload_successful 0, the gateway serves as before', { timeout: 60_000 }, async (t) => {
  const { gw, config } = await start(t)
  const { client } = await connect(t, gw)
  const before = (await client.listTools()).tools.map(tool => tool.name).sort()
  writeFileSync(gw.configFile, JSON.stringify({ ...config, upstreams: [{ name: 'Bad Name', transport: 'stdio' }], catalog: { pageSize: 0 } }))
  gw.kill('SIGHUP')
  await waitFor(async () => (await reloads(gw, 'invalid')) === 1, 'the refused reload to be counted')
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_config_last_reload_successful'), 0)
  const refusal = gw.logs.find(l => l.msg.startsWith('config reload refused'))
  const paths = ((refusal?.errors ?? []) as Array<{ path: string }>).map(e => e.path)
  for (const path of ['upstreams[0].name', 'upstreams[0].command', 'catalog.pageSize']) assert.ok(paths.includes(path), `${path} in ${JSON.stringify(paths)}`)
  assert.deepEqual((await client.listTools()).tools.map(tool => tool.name).sort(), before)
  assert.equal(((await client.callTool({ name: 'keep__echo', arguments: { text: 'still' } })) as ToolResult).content[0]?.text, 'still')
  assert.notEqual(gw.logs.length, 0)
  assert.equal(isAlive(gw.pid), true, 'SIGHUP no longer ends the process')
})

test('the admin API: its own listener and token, upstreams, sessions, a redacted config, reload and reconnect', { timeout: 60_000 }, async (t) => {
  const { gw, config, admin } = await start(t)
  await connect(t, gw)
  const bearer = { authorization: `Bearer ${ADMIN_TOKEN}` }
  assert.equal((await fetch(`${admin}/admin/upstreams`)).status, 401)
  assert.equal((await fetch(`${admin}/admin/upstreams`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401)
  assert.equal((await fetch(`${gw.baseUrl}/admin/upstreams`, { headers: bearer })).status, 404, 'never on the MCP port')
  assert.equal((await fetch(`${gw.baseUrl}/admin/reload`, { method: 'POST', headers: bearer })).status, 404)

  const upstreams = await (await fetch(`${admin}/admin/upstreams`, { headers: bearer })).json() as { upstreams: Array<{ name: string, state: string, tools: number, inFlight: number, reconnects: number, transport: string }> }
  assert.deepEqual(upstreams.upstreams.map(u => [u.name, u.state, u.transport]), [['keep', 'ready', 'stdio'], ['gone', 'ready', 'stdio'], ['tuned', 'ready', 'stdio']])
  assert.ok(upstreams.upstreams.every(u => u.tools > 0 && u.inFlight === 0 && u.reconnects === 0))
  const sessions = await (await fetch(`${admin}/admin/sessions`, { headers: bearer })).json() as { total: number, byPrincipal: Record<string, number> }
  assert.equal(sessions.total, 1)
  assert.deepEqual(sessions.byPrincipal, { alice: 1 })

  const shown = await (await fetch(`${admin}/admin/config`, { headers: bearer })).text()
  assert.ok(!shown.includes(ALICE) && !shown.includes(ADMIN_TOKEN), 'no secret in /admin/config')
  assert.match(shown, /"keep"/)

  writeFileSync(gw.configFile, JSON.stringify({ ...config, listen: { host: '127.0.0.1', port: gw.port }, upstreams: 'nope' }))
  const refused = await fetch(`${admin}/admin/reload`, { method: 'POST', headers: bearer })
  assert.equal(refused.status, 400)
  assert.match(JSON.stringify(await refused.json()), /upstreams/)
  writeFileSync(gw.configFile, JSON.stringify({ ...config, upstreams: [stdio('keep'), stdio('tuned')], listen: { host: '127.0.0.1', port: gw.port + 1 } }))
  // A preview says what the reload will do and does nothing: gone is still there afterwards.
  const preview = await fetch(`${admin}/admin/reload/preview`, { headers: bearer })
  assert.equal(preview.status, 200)
  const previewed = await preview.json() as { outcome: string, removed: string[], restartRequired: string[] }
  assert.deepEqual([previewed.outcome, previewed.removed, previewed.restartRequired], ['preview', ['gone'], ['listen']])
  const still = await (await fetch(`${admin}/admin/upstreams`, { headers: bearer })).json() as { upstreams: Array<{ name: string }> }
  assert.deepEqual(still.upstreams.map(u => u.name), ['keep', 'gone', 'tuned'])
  const applied = await fetch(`${admin}/admin/reload`, { method: 'POST', headers: bearer })
  assert.equal(applied.status, 200)
  const body = await applied.json() as { removed: string[], unchanged: string[], restartRequired: string[] }
  assert.deepEqual([body.removed, body.unchanged, body.restartRequired], [['gone'], ['keep', 'tuned'], ['listen']])
  assert.equal(((await (await fetch(`${admin}/admin/config`, { headers: bearer })).json()) as { listen: { port: number } }).listen.port, gw.port, 'the effective config keeps the running listener')
  assert.equal((await fetch(`${admin}/admin/upstreams/nope/reconnect`, { method: 'POST', headers: bearer })).status, 404)
  const keepPid = upstreamPid(gw, 'keep')
  assert.equal((await fetch(`${admin}/admin/upstreams/keep/reconnect`, { method: 'POST', headers: bearer })).status, 202)
  await waitFor(() => { const pid = upstreamPid(gw, 'keep'); return pid !== undefined && pid !== keepPid && (keepPid === undefined || !isAlive(keepPid)) }, 'a new keep process, the old one gone')
})

test('--watch reloads when the content of the file changes, and not when a save leaves it as it was', { timeout: 60_000 }, async (t) => {
  const { gw, config } = await start(t, ['--watch'])
  const { client } = await connect(t, gw)
  rewrite(gw, config)
  // Nothing changed. The next save comes well past the watcher's settle window (250 ms), so that it
  // is looked at on its own rather than together with this one.
  await new Promise(resolve => setTimeout(resolve, 1000))
  rewrite(gw, { ...config, upstreams: [stdio('keep')] })
  await waitFor(async () => (await reloads(gw, 'ok')) >= 1, 'the watcher to reload')
  await waitFor(async () => !(await client.listTools()).tools.some(tool => tool.name.startsWith('gone__')) || undefined, 'the removed upstream\'s tools to go')
  // The change is applied; a reload for the save before it would have come first.
  assert.equal(await reloads(gw, 'ok'), 1, 'only the save that changed the content reloaded')
})
