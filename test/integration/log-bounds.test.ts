import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { connectClient, rawPost, startGateway, waitFor, waitReady, type LogLine } from '../helpers/start-gateway.ts'

const MEGABYTE = 1024 * 1024
// Default logging.maxStringChars is 1024: a line of a few fields stays well under this.
const MAX_LINE_CHARS = 8 * 1024
const MARKER = /…\[truncated \d+ chars\]/

const CONFIG = JSON.stringify({
  upstreams: [{ name: 'fx', transport: 'stdio', ...fixtureCommand(['--name', 'fx']) }],
  audit: { arguments: true }
})

function longest (logs: LogLine[]): number {
  return Math.max(...logs.map(line => JSON.stringify(line).length))
}

test('a 1 MB clientInfo.name is cut in the session line, and no log line grows past a few KB', async (t) => {
  const gw = await startGateway(t, CONFIG)
  await waitReady(gw)
  const name = 'n'.repeat(MEGABYTE)
  const res = await rawPost(gw.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '1' } } })
  assert.equal(res.status, 200)
  await res.text()
  const opened = await waitFor(() => gw.logs.find(line => line.msg === 'session opened'), 'the session line')
  assert.match(String(opened.client), MARKER)
  assert.ok(String(opened.client).length < 2048)
  assert.ok(longest(gw.logs) < MAX_LINE_CHARS, `a log line of ${longest(gw.logs)} characters`)
})

test('a 1 MB argument is cut in the audit line; client_secret, access_token, privateKey, sessionToken and pwd are redacted', async (t) => {
  const gw = await startGateway(t, CONFIG)
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const secrets = { client_secret: 'cs-0001', access_token: 'at-0002', privateKey: 'pk-0003', sessionToken: 'st-0004', pwd: 'pw-0005' }
  const result = await client.callTool({ name: 'fx__echo', arguments: { text: 't'.repeat(MEGABYTE), ...secrets } })
  assert.ok(result.content !== undefined)
  const audit = await waitFor(() => gw.logs.find(line => line.component === 'audit' && line.tool === 'fx__echo'), 'the audit line')
  const args = audit.arguments as Record<string, unknown>
  assert.match(String(args.text), MARKER)
  for (const key of Object.keys(secrets)) assert.equal(args[key], '[redacted]', key)
  const text = JSON.stringify(gw.logs)
  for (const value of Object.values(secrets)) assert.ok(!text.includes(value), `${value} is logged`)
  assert.ok(JSON.stringify(audit).length < MAX_LINE_CHARS, `an audit line of ${JSON.stringify(audit).length} characters`)
  assert.ok(longest(gw.logs) < MAX_LINE_CHARS, `a log line of ${longest(gw.logs)} characters`)
})
