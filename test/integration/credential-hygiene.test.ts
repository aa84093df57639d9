/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { fixtureCommand } from '../helpers/spawn-fixture.ts'
import { scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'

test('the client\'s Authorization and cookies never reach an upstream; the configured upstream credential does', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const env = { ...process.env, WEB_TOKEN: 'upstream-token-123' }
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: http.url, headers: { Authorization: 'Bearer ${WEB_TOKEN}' } }]
  }), env)
  await waitReady(gw)
  const client = new Client({ name: 'creds', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url), {
    requestInit: { headers: { Authorization: 'Bearer client-secret-xyz', Cookie: 'sid=client-cookie' } }
  }))
  t.after(async () => { await client.close() })
  const result = await client.callTool({ name: 'web__whoami', arguments: {} }) as { structuredContent: { headers?: Record<string, string> } }
  const headers = result.structuredContent.headers ?? {}
  assert.equal(headers.authorization, 'Bearer upstream-token-123')
  assert.equal(headers.cookie, undefined)
  assert.ok(!JSON.stringify(headers).includes('client-secret-xyz'))
  const everything = JSON.stringify(gw.logs) + await scrapeMetrics(gw.baseUrl)
  assert.ok(!everything.includes('client-secret-xyz'), 'the client credential is in no log line or metric')
  assert.ok(!everything.includes('upstream-token-123'), 'the upstream credential is in no log line or metric')
})

test('a stdio upstream gets only its configured env and a few harmless variables, and secrets it prints are redacted', async (t) => {
  const fixture = fixtureCommand(['--name', 'chatty'])
  const script = 'echo "my token is $API_TOKEN; gateway secret is [$GATEWAY_ONLY_SECRET]" >&2; exec "$0" "$@"'
  const env = { ...process.env, API_TOKEN_SOURCE: 'tok-abcdef-987', GATEWAY_ONLY_SECRET: 'gw-secret-555' }
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'chatty', transport: 'stdio', command: 'sh', args: ['-c', script, fixture.command, ...fixture.args], env: { API_TOKEN: '${API_TOKEN_SOURCE}' } }]
  }), env)
  await waitReady(gw)
  const line = await waitFor(() => gw.logs.find(l => typeof l.msg === 'string' && l.msg.startsWith('my token is')), 'the upstream\'s stderr line')
  assert.equal(line.upstream, 'chatty')
  assert.equal(line.msg, 'my token is [redacted]; gateway secret is []')
  assert.ok(!JSON.stringify(gw.logs).includes('tok-abcdef-987'))
})

test('with auth on, the client\'s key reaches no upstream, log line or metric; audited arguments are redacted; no label names a principal or session', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const key = 'alice-key-never-leaks-0123456789'
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: http.url }],
    auth: { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }] },
    audit: { arguments: true }
  }), { ...process.env, ALICE_KEY: key })
  await waitReady(gw)
  const client = new Client({ name: 'creds', version: '1' })
  const transport = new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { Authorization: `Bearer ${key}`, Cookie: 'sid=client-cookie' } } })
  await client.connect(transport)
  t.after(async () => { await client.close() })
  const who = await client.callTool({ name: 'web__whoami', arguments: {} }) as { structuredContent: { headers?: Record<string, string> } }
  const headers = who.structuredContent.headers ?? {}
  assert.equal(headers.authorization, undefined)
  assert.equal(headers.cookie, undefined)
  assert.ok(!JSON.stringify(headers).includes(key))
  await client.callTool({ name: 'web__echo', arguments: { text: 'hi', token: 'arg-secret-777' } })
  const audit = gw.logs.find(l => l.component === 'audit' && l.tool === 'web__echo')
  assert.deepEqual(audit?.arguments, { text: 'hi', token: '[redacted]' })
  const metrics = await scrapeMetrics(gw.baseUrl)
  const everything = JSON.stringify(gw.logs) + metrics
  for (const secret of [key, 'arg-secret-777', 'client-cookie', transport.sessionId ?? 'no-session']) assert.ok(!everything.includes(secret), `${secret.slice(0, 6)}… leaked`)
  for (const line of metrics.split('\n')) assert.doesNotMatch(line, /principal=|session=|alice/, line)
})
