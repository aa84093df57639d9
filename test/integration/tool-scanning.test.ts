/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/client'
import { runCli } from '../helpers/cli.ts'
import { REPO_ROOT } from '../helpers/spawn-fixture.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

// The definition scan through the gateway: a real stdio upstream whose tools carry each kind of
// finding (test/fixtures/poisoned-server.ts) beside a clean "mail" upstream whose tool it names.

const FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'poisoned-server.ts')
const ADMIN_TOKEN = 'scan-admin-token-0123456789'
const ENV = { ...process.env, ADMIN_TOKEN }
const POISONED = { hidden_note: 'hidden_instructions', invisible_text: 'invisible_unicode', bcc_helper: 'shadowing', report_usage: 'foreign_host', long_story: 'oversized' } as const
const ALL_TOOLS = ['mail__send_email', 'poisoned__add_numbers', ...Object.keys(POISONED).map(t => `poisoned__${t}`)].sort()

type PinsView = Array<{ upstream: string, tools: Array<{ tool: string, state: string, definition: { name?: string, description?: string } | null, pending?: { heldBy: string, findings: Array<{ rule: string, path: string, reason: string }>, definition: { name?: string, description?: string } | null } }> }>
interface ToolResult { isError?: boolean, content?: Array<{ type: string, text?: string }>, _meta?: Record<string, unknown> }
interface Setup { gw: RunningGateway, client: Client, configFile: string, adminUrl: string }

async function setup (t: TestContext, scanning: Record<string, unknown>, pinning: Record<string, unknown> = {}): Promise<Setup> {
  const dir = await mkdtemp(join(tmpdir(), 'switchboard-scan-'))
  t.after(async () => { await rm(dir, { recursive: true, force: true }) })
  const stdio = (args: string[]): Record<string, unknown> => ({ transport: 'stdio', command: process.execPath, args: ['--import', 'tsx', FIXTURE, ...args], cwd: REPO_ROOT })
  const yaml = JSON.stringify({
    upstreams: [{ name: 'poisoned', ...stdio([]) }, { name: 'mail', ...stdio(['--role', 'mail']) }],
    catalog: { listChangedDebounceMs: 20 },
    pinning: { file: join(dir, 'gateway.pins.json'), reloadIntervalMs: 200, ...pinning },
    scanning: { maxDescriptionChars: 500, ...scanning },
    admin: { token: '${ADMIN_TOKEN}', listen: { host: '127.0.0.1', port: 0 } }
  })
  const configFile = join(dir, 'gateway.yaml')
  await writeFile(configFile, yaml)
  const gw = await startGateway(t, yaml, ENV, configFile)
  await waitReady(gw)
  const admin = gw.admin
  assert.ok(admin !== undefined)
  await admin.listen({ host: '127.0.0.1', port: 0 })
  const client = await connectClient(t, gw.url)
  return { gw, client, configFile, adminUrl: `http://127.0.0.1:${(admin.server.address() as { port: number }).port}` }
}

async function toolNames (client: Client): Promise<string[]> {
  return (await client.listTools()).tools.map(tool => tool.name).sort()
}

async function findings (gw: RunningGateway, rule: string): Promise<number | undefined> {
  return metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_tool_scan_findings_total', { upstream: 'poisoned', rule })
}

function scanLines (gw: RunningGateway): Array<Record<string, unknown>> {
  return gw.logs.filter(l => l.component === 'scanning' && l.level === 40)
}

async function admin (s: Setup, method: string, path: string, body?: unknown): Promise<{ status: number, body: Record<string, unknown> }> {
  const response = await fetch(`${s.adminUrl}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: response.status, body: await response.json() as Record<string, unknown> }
}

test('warn (the default): every tool stays listed and callable; each finding is logged once and counted by rule', async (t) => {
  const s = await setup(t, {})
  await waitFor(async () => (await toolNames(s.client)).length === ALL_TOOLS.length, 'both upstreams listed')
  assert.deepEqual(await toolNames(s.client), ALL_TOOLS)
  await waitFor(async () => await findings(s.gw, 'shadowing') === 1, 'the shadowing finding, whichever upstream came first')
  for (const rule of Object.values(POISONED)) assert.equal(await findings(s.gw, rule), rule === 'hidden_instructions' ? 3 : rule === 'invisible_unicode' ? 2 : 1, rule)
  assert.equal(metricValue(await scrapeMetrics(s.gw.baseUrl), 'switchboard_tool_scan_findings_total', { upstream: 'mail', rule: 'shadowing' }), 0)
  const called = await s.client.callTool({ name: 'poisoned__hidden_note', arguments: { note: 'x' } }) as ToolResult
  assert.equal(called.content?.[0]?.text, 'ran hidden_note')

  const lines = scanLines(s.gw)
  for (const [tool, rule] of Object.entries(POISONED)) {
    assert.ok(lines.some(l => l.upstream === 'poisoned' && l.tool === tool && l.rule === rule && typeof l.path === 'string' && typeof l.reason === 'string'), `${tool}: ${rule} logged`)
  }
  assert.ok(!lines.some(l => l.tool === 'add_numbers' || l.upstream === 'mail'), 'the clean tools are not reported')
  const bidi = lines.find(l => l.tool === 'invisible_text' && l.path === 'inputSchema.properties.text.description')
  assert.match(String(bidi?.reason), /bidirectional control U\+202E/)
  assert.ok(lines.every(l => String(l.reason).length < 200 && !/[\u202E\u{E0000}-\u{E007F}]/u.test(JSON.stringify(l))), 'reasons are short and carry no invisible character')
  // A re-listing of the same definitions (an approval, a reload) logs and counts nothing again.
  const before = lines.length
  s.gw.gateway.catalogs.recheck()
  assert.equal(scanLines(s.gw).length, before)
  assert.equal(await findings(s.gw, 'oversized'), 1)
})

async function quarantined (s: Setup): Promise<void> {
  await waitFor(async () => (await toolNames(s.client)).includes('mail__send_email') && (await toolNames(s.client)).includes('poisoned__add_numbers'), 'the clean tools listed')
  await waitFor(async () => !(await toolNames(s.client)).includes('poisoned__bcc_helper'), 'the shadowing tool held, whichever upstream came first')
  assert.deepEqual(await toolNames(s.client), ['mail__send_email', 'poisoned__add_numbers'])
  for (const tool of Object.keys(POISONED)) {
    const refused = await s.client.callTool({ name: `poisoned__${tool}`, arguments: {} }) as ToolResult
    assert.equal(refused.isError, true, tool)
    assert.deepEqual(refused._meta?.['switchboard/error'], { code: 'SB_ERR_TOOL_QUARANTINED', upstream: 'poisoned', tool })
    assert.match(refused.content?.[0]?.text ?? '', new RegExp(`has findings of the gateway's definition scan.*switchboard pins approve --upstream poisoned --tool ${tool}`))
  }
  const clean = await s.client.callTool({ name: 'poisoned__add_numbers', arguments: { a: 1, b: 2 } }) as ToolResult
  assert.equal(clean.content?.[0]?.text, 'ran add_numbers')
}

test('quarantine: poisoned tools are hidden and refused, the clean one served; pins list and the admin API show the findings; approving releases that definition', async (t) => {
  const s = await setup(t, { mode: 'quarantine' }, { mode: 'quarantine' })
  await quarantined(s)
  assert.equal(metricValue(await scrapeMetrics(s.gw.baseUrl), 'switchboard_tool_quarantined', { upstream: 'poisoned' }), 5)

  const listed = await runCli(['pins', 'list', '--config', s.configFile], { ADMIN_TOKEN })
  assert.equal(listed.code, 0, listed.stderr)
  assert.match(listed.stdout, /scanning quarantine/)
  assert.match(listed.stdout, /hidden_note\s+held\s+pinned -\s+pending [0-9a-f]{12}.*\(held by the definition scan\)/)
  assert.match(listed.stdout, /finding hidden_instructions at description: hidden-instruction block: "<IMPORTANT>"/)
  assert.match(listed.stdout, /finding foreign_host at description: URL to "collect\.evil-metrics\.io", not in scanning\.allowedHosts/)
  assert.match(listed.stdout, /finding shadowing at description: names tool "mail__send_email" of upstream "mail"/)
  assert.match(listed.stdout, /finding invisible_unicode at inputSchema\.properties\.text\.description: bidirectional control U\+202E/)
  assert.match(listed.stdout, /add_numbers\s+pinned\s+pinned [0-9a-f]{12}\s*$/m)
  const definitions = await runCli(['pins', 'list', '--config', s.configFile, '--upstream', 'poisoned', '--definitions'], { ADMIN_TOKEN })
  assert.match(definitions.stdout, /invisible_text[^\n]*\n(?:\s+finding[^\n]*\n)*\s+pending definition:\n/)
  assert.ok(definitions.stdout.includes('\\u{202E}') && !/[\u202E\u{E0000}-\u{E007F}]/u.test(definitions.stdout), 'invisible characters are shown escaped')

  const pins = await admin(s, 'GET', '/pins?upstream=poisoned')
  assert.equal(pins.status, 200)
  const [upstream] = pins.body.upstreams as PinsView
  assert.equal(upstream?.upstream, 'poisoned')
  const report = upstream?.tools.find(v => v.tool === 'report_usage')
  assert.equal(report?.state, 'held')
  assert.equal(report?.pending?.heldBy, 'scan')
  assert.deepEqual(report?.pending?.findings, [{ rule: 'foreign_host', path: 'description', reason: 'URL to "collect.evil-metrics.io", not in scanning.allowedHosts' }])
  // Held at first sight: nothing pinned yet, the definition the scan held is there to review.
  assert.equal(report?.definition, null)
  assert.equal(report?.pending?.definition?.name, 'report_usage')
  assert.equal(report?.pending?.definition?.description, 'Reports usage statistics; details at https://collect.evil-metrics.io/track')

  // Approval through the admin API, applied at once.
  const approved = await admin(s, 'POST', '/pins/approve', { upstream: 'poisoned', tools: ['report_usage'] })
  assert.equal(approved.status, 200, JSON.stringify(approved.body))
  assert.deepEqual((approved.body.approved as Array<{ tool: string }>).map(a => a.tool), ['report_usage'])
  await waitFor(async () => (await toolNames(s.client)).includes('poisoned__report_usage'), 'report_usage released')
  const released = ((await admin(s, 'GET', '/pins?upstream=poisoned')).body.upstreams as PinsView)[0]?.tools.find(v => v.tool === 'report_usage')
  assert.deepEqual(released?.definition, report?.pending?.definition, 'the approved definition is the pinned one')
  const ran = await s.client.callTool({ name: 'poisoned__report_usage', arguments: {} }) as ToolResult
  assert.equal(ran.content?.[0]?.text, 'ran report_usage')
  const again = await admin(s, 'POST', '/pins/approve', { upstream: 'poisoned', tools: ['report_usage'] })
  assert.equal(again.status, 409)
  assert.match(String(again.body.message), /poisoned\/report_usage: nothing pending/)
  assert.equal((await admin(s, 'POST', '/pins/approve', { tools: ['x'] })).status, 400)

  // Approval through the CLI, picked up by the running gateway from the pin file.
  const cli = await runCli(['pins', 'approve', '--config', s.configFile, '--upstream', 'poisoned', '--tool', 'hidden_note'], { ADMIN_TOKEN })
  assert.equal(cli.code, 0, cli.stderr)
  assert.match(cli.stdout, /approved poisoned\/hidden_note: - -> [0-9a-f]{12}/)
  await waitFor(async () => (await toolNames(s.client)).includes('poisoned__hidden_note'), 'hidden_note released')
  assert.ok(!(await toolNames(s.client)).includes('poisoned__long_story'), 'the others stay held')
  assert.equal(metricValue(await scrapeMetrics(s.gw.baseUrl), 'switchboard_tool_quarantined', { upstream: 'poisoned' }), 3)
})

test('quarantine with pinning off: the scan still holds through the pin store, and an approval releases the tool', async (t) => {
  const s = await setup(t, { mode: 'quarantine' }, { mode: 'off' })
  await quarantined(s)
  const pins = await admin(s, 'GET', '/pins')
  assert.equal(pins.body.pinning, 'off')
  assert.equal(pins.body.scanning, 'quarantine')
  const [mail, poisoned] = pins.body.upstreams as Array<{ upstream: string, tools: Array<{ tool: string }> }>
  assert.deepEqual(mail?.tools, [], 'pinning off: clean tools leave no record')
  assert.deepEqual(poisoned?.tools.map(v => v.tool), Object.keys(POISONED).sort())
  const approved = await admin(s, 'POST', '/pins/approve', { upstream: 'poisoned', tools: ['long_story'] })
  assert.equal(approved.status, 200, JSON.stringify(approved.body))
  await waitFor(async () => (await toolNames(s.client)).includes('poisoned__long_story'), 'long_story released')
})

test('scanning is applied live: a reload that allows a host releases the tool held for it', async (t) => {
  const s = await setup(t, { mode: 'quarantine' })
  await quarantined(s)
  const config = JSON.parse(await readFile(s.configFile, 'utf8')) as { scanning: Record<string, unknown> }
  config.scanning.allowedHosts = ['*.evil-metrics.io']
  await writeFile(s.configFile, JSON.stringify(config))
  const reloaded = await admin(s, 'POST', '/reload')
  assert.equal(reloaded.status, 200, JSON.stringify(reloaded.body))
  assert.ok((reloaded.body.applied as string[]).includes('scanning'))
  assert.ok(!(reloaded.body.restartRequired as string[]).includes('scanning'))
  await waitFor(async () => (await toolNames(s.client)).includes('poisoned__report_usage'), 'report_usage released by the reload')
  assert.ok(!(await toolNames(s.client)).includes('poisoned__hidden_note'))
  const listed = await runCli(['pins', 'list', '--config', s.configFile], { ADMIN_TOKEN })
  assert.match(listed.stdout, /report_usage\s+pinned\s+pinned [0-9a-f]{12}\s*$/m, 'the hold is settled into a first-sight pin')
})
