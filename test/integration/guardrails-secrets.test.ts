import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import type { ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { connectClient, metricValue, rawInitialize, rawPost, scrapeMetrics, startGateway, waitFor, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'
import { SAMPLES } from '../helpers/sample-secrets.ts'

interface Setup { gw: RunningGateway, upstream: ControllableServerHandle, client: Client }

/** A gateway with the given guardrails in front of one real SDK server (`up`), and an SDK client. */
async function setup (t: TestContext, guardrails: unknown): Promise<Setup> {
  const upstream = await startControllableHttpServer({ name: 'up' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'up', transport: 'streamable-http', url: upstream.url }], guardrails }))
  await waitReady(gw)
  return { gw, upstream, client: await connectClient(t, gw.url) }
}

interface ToolResult { content: Array<{ type: string, text?: string, resource?: { text?: string } }>, structuredContent?: Record<string, unknown>, isError?: boolean, _meta?: Record<string, unknown> }

async function call (client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return await client.callTool({ name, arguments: args }) as ToolResult
}

function errorOf (result: ToolResult): Record<string, unknown> {
  assert.equal(result.isError, true, JSON.stringify(result))
  return result._meta?.['switchboard/error'] as Record<string, unknown>
}

const calledTools = (upstream: ControllableServerHandle): string[] => upstream.state.stats.calledTools

test('results.secrets redact: secrets in text and in structuredContent come back as [redacted:<kind>], counted per kind', async (t) => {
  const { gw, client } = await setup(t, { results: { secrets: 'redact' } })
  const text = `id ${SAMPLES.aws_access_key} token ${SAMPLES.github_token} password=hunter2-Xy`
  // echo answers with the text in a text item and in structuredContent (its outputSchema says a string),
  // which the SDK client validates: redaction keeps strings strings.
  const echoed = await call(client, 'up__echo', { text })
  const redacted = 'id [redacted:aws_access_key] token [redacted:github_token] password=[redacted:password]'
  assert.equal(echoed.isError, undefined)
  assert.deepEqual(echoed.content, [{ type: 'text', text: redacted }])
  assert.deepEqual(echoed.structuredContent, { text: redacted })

  const replied = await call(client, 'up__reply', {
    content: [
      { type: 'text', text: 'nothing secret here' },
      { type: 'resource', resource: { uri: 'file:///srv/.env', mimeType: 'text/plain', text: `SLACK=${SAMPLES.slack_token}\n` } }
    ],
    structuredContent: { user: { name: 'jane', password: 'hunter2-Xy', sessions: [{ jwt: SAMPLES.jwt, ok: true }] }, count: 2 }
  })
  assert.deepEqual(replied.content, [
    { type: 'text', text: 'nothing secret here' },
    { type: 'resource', resource: { uri: 'file:///srv/.env', mimeType: 'text/plain', text: 'SLACK=[redacted:slack_token]\n' } }
  ])
  assert.deepEqual(replied.structuredContent, { user: { name: 'jane', password: '[redacted:password]', sessions: [{ jwt: '[redacted:jwt]', ok: true }] }, count: 2 })

  const metrics = await scrapeMetrics(gw.baseUrl)
  const secrets = (kind: string): number | undefined => metricValue(metrics, 'switchboard_guardrail_secrets_total', { upstream: 'up', kind, where: 'result' })
  assert.equal(secrets('aws_access_key'), 2, 'text item and structuredContent')
  assert.equal(secrets('github_token'), 2)
  assert.equal(secrets('password'), 3)
  assert.equal(secrets('slack_token'), 1)
  assert.equal(secrets('jwt'), 1)
  assert.doesNotMatch(metrics, /hunter2|AKIA/)
  const lines = JSON.stringify(gw.logs)
  assert.ok(!lines.includes(SAMPLES.aws_access_key) && !lines.includes(SAMPLES.jwt), 'no secret reaches a log line')
})

test('results.secrets block: a result with a secret is withheld with a tool error that names the kinds, never the secret', async (t) => {
  const { gw, client } = await setup(t, { results: { secrets: 'block' } })
  const clean = await call(client, 'up__echo', { text: 'a UUID 123e4567-e89b-12d3-a456-426614174000 is no secret' })
  assert.equal(clean.isError, undefined)

  const inText = await call(client, 'up__echo', { text: `key ${SAMPLES.private_key}` })
  assert.deepEqual(errorOf(inText), { code: 'SB_ERR_SECRET_IN_RESULT', upstream: 'up', kinds: ['private_key'] })
  assert.match(inText.content[0]?.text ?? '', /result of tool "up__echo" carries a secret \(private_key\); it was withheld/)
  assert.equal(inText.structuredContent, undefined)

  const inStructured = await call(client, 'up__reply', { content: [{ type: 'text', text: 'see structured' }], structuredContent: { deep: [[{ credentials: { api_key: 'k3y-v4lue-1' } }]] } })
  assert.deepEqual(errorOf(inStructured), { code: 'SB_ERR_SECRET_IN_RESULT', upstream: 'up', kinds: ['password'] })
  assert.ok(!JSON.stringify(inStructured).includes('k3y-v4lue-1'))

  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_guardrail_secrets_total', { upstream: 'up', kind: 'private_key', where: 'result' }), 2, 'text item and structuredContent')
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: 'up', tool: 'up__echo', outcome: 'guardrail' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: 'up', tool: 'up__reply', outcome: 'guardrail' }), 1)
  const audited = gw.logs.filter(l => l.component === 'audit').map(l => [l.tool, l.outcome])
  assert.deepEqual(audited, [['up__echo', 'ok'], ['up__echo', 'guardrail'], ['up__reply', 'guardrail']])
})

test('arguments.secrets block: a call whose arguments carry a secret never reaches the upstream', async (t) => {
  const { gw, upstream, client } = await setup(t, { arguments: { secrets: 'block' } })
  const refused = await call(client, 'up__reply', { content: [{ type: 'text', text: 'ok' }], structuredContent: { config: { headers: [`Authorization: Bearer ${SAMPLES.jwt}`] } } })
  assert.deepEqual(errorOf(refused), { code: 'SB_ERR_SECRET_IN_ARGUMENTS', upstream: 'up', kinds: ['jwt'] })
  assert.match(refused.content[0]?.text ?? '', /arguments of tool "up__reply" carry a secret \(jwt\); the call was not sent to the upstream/)
  const byName = await call(client, 'up__echo', { text: SAMPLES.github_pat })
  assert.deepEqual(errorOf(byName), { code: 'SB_ERR_SECRET_IN_ARGUMENTS', upstream: 'up', kinds: ['github_token'] })
  assert.deepEqual(calledTools(upstream), [], 'the upstream saw neither call')

  const allowed = await call(client, 'up__echo', { text: 'sha 4b825dc642cb6eb9a060e54bf8d69288fbee4904, nothing secret' })
  assert.equal(allowed.isError, undefined)
  assert.deepEqual(calledTools(upstream), ['echo'])
  // Results are not scanned: only the arguments side is on.
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_guardrail_secrets_total', { upstream: 'up', kind: 'jwt', where: 'arguments' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_guardrail_secrets_total', { upstream: 'up', kind: 'github_token', where: 'arguments' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_tool_calls_total', { upstream: 'up', tool: 'up__echo', outcome: 'guardrail' }), 1)
})

test('arguments.secrets block: a secret that is an argument\'s key, at the top or nested, never reaches the upstream', async (t) => {
  const { gw, upstream, client } = await setup(t, { arguments: { secrets: 'block' } })
  const top = await call(client, 'up__echo', { text: 'hello', [SAMPLES.aws_access_key]: 1 })
  assert.deepEqual(errorOf(top), { code: 'SB_ERR_SECRET_IN_ARGUMENTS', upstream: 'up', kinds: ['aws_access_key'] })
  const nested = await call(client, 'up__reply', { content: [], structuredContent: { grants: [{ [SAMPLES.github_token]: 'repo' }] } })
  assert.deepEqual(errorOf(nested), { code: 'SB_ERR_SECRET_IN_ARGUMENTS', upstream: 'up', kinds: ['github_token'] })
  assert.deepEqual(calledTools(upstream), [], 'the upstream saw neither call')
  assert.ok(!JSON.stringify(gw.logs).includes(SAMPLES.aws_access_key), 'the key is in no log line')
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_guardrail_secrets_total', { upstream: 'up', kind: 'aws_access_key', where: 'arguments' }), 1)
})

test('results.secrets redact: a structuredContent key holding a secret reaches the client renamed to [redacted:<kind>], its value kept', async (t) => {
  const { gw, client } = await setup(t, { results: { secrets: 'redact' } })
  const other = 'ghp' + '_' + 'Z9y8X7w6'.repeat(4) + 'v5U4'
  // The upstream is an HTTP one: its result comes to the gateway as the bytes it wrote (raw-result.ts).
  const replied = await call(client, 'up__reply', {
    content: [{ type: 'text', text: 'see structured' }],
    structuredContent: { owner: 'jane', tokens: { [SAMPLES.github_token]: { scopes: ['repo'] }, [other]: { scopes: [] } }, [SAMPLES.slack_token]: true }
  })
  assert.equal(replied.isError, undefined)
  assert.deepEqual(replied.structuredContent, {
    owner: 'jane',
    tokens: { '[redacted:github_token]': { scopes: ['repo'] }, '[redacted:github_token]#2': { scopes: [] } },
    '[redacted:slack_token]': true
  })
  const seen = JSON.stringify(replied)
  assert.ok(!seen.includes(SAMPLES.github_token) && !seen.includes(other) && !seen.includes(SAMPLES.slack_token), seen)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_guardrail_secrets_total', { upstream: 'up', kind: 'github_token', where: 'result' }), 2)
  assert.equal(metricValue(metrics, 'switchboard_guardrail_secrets_total', { upstream: 'up', kind: 'slack_token', where: 'result' }), 1)
})

test('results.maxBytes: a result larger than the cap is refused with a clear error and counted; smaller ones pass', async (t) => {
  const { gw, upstream, client } = await setup(t, { results: { maxBytes: 4096 } })
  const small = await call(client, 'up__echo', { text: 'x'.repeat(1000) })
  assert.equal(small.isError, undefined)
  const large = await call(client, 'up__echo', { text: 'x'.repeat(5000) })
  const error = errorOf(large)
  assert.equal(error.code, 'SB_ERR_RESULT_TOO_LARGE')
  assert.equal(error.maxBytes, 4096)
  assert.ok(Number(error.bytes) > 10_000, 'text and structuredContent both carry it')
  assert.match(large.content[0]?.text ?? '', /result of tool "up__echo" is \d+ bytes, more than the 4096 bytes guardrails.results.maxBytes allows; it was withheld/)
  assert.deepEqual(calledTools(upstream), ['echo', 'echo'], 'the tool ran: it is its answer that is withheld')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_guardrail_oversize_results_total', { upstream: 'up' }), 1)
  const audit = gw.logs.filter(l => l.component === 'audit').map(l => [l.outcome, typeof l.responseBytes === 'number' && l.responseBytes > 0])
  assert.deepEqual(audit, [['ok', true], ['guardrail', true]])
})

test('a task\'s result passes the same guardrails when it comes through tasks/result', { timeout: 60_000 }, async (t) => {
  // The published server-everything runs simulate-research-query as a task; its report repeats the topic.
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'everything', transport: 'stdio', command: process.execPath, args: ['node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'] }],
    guardrails: { results: { secrets: 'redact' } }
  }))
  await waitReady(gw)
  const { sessionId } = await rawInitialize(gw.url, '2025-11-25')
  const headers = { 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' }
  await rawPost(gw.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)
  const rpc = async (id: number, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const text = await (await rawPost(gw.url, { jsonrpc: '2.0', id, method, params }, headers)).text()
    const data = text.startsWith('{') ? text : text.split('\n').filter(l => l.startsWith('data:')).at(-1)?.slice(5) ?? '{}'
    return (JSON.parse(data) as { result?: Record<string, unknown> }).result ?? {}
  }
  const created = await rpc(2, 'tools/call', { name: 'everything__simulate-research-query', arguments: { topic: `relays ${SAMPLES.aws_access_key}` }, task: { ttl: 60_000 } })
  const taskId = (created.task as { taskId: string }).taskId
  await waitFor(async () => (await rpc(3, 'tasks/get', { taskId })).status === 'completed', 'the task to complete', 20_000)
  const result = JSON.stringify(await rpc(4, 'tasks/result', { taskId }))
  assert.match(result, /relays \[redacted:aws_access_key\]/)
  assert.ok(!result.includes(SAMPLES.aws_access_key))
  assert.ok(Number(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_guardrail_secrets_total', { upstream: 'everything', kind: 'aws_access_key', where: 'result' })) >= 1)
})

test('a reload turns the guardrails on and off for calls that follow, on the same session', async (t) => {
  const upstream = await startControllableHttpServer({ name: 'up' })
  t.after(() => upstream.close())
  const dir = await mkdtemp(join(tmpdir(), 'guardrails-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'gateway.json')
  const config = (guardrails: unknown): string => JSON.stringify({ upstreams: [{ name: 'up', transport: 'streamable-http', url: upstream.url }], guardrails })
  await writeFile(file, config({}))
  const gw = await startGateway(t, config({}), process.env, file)
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  const text = `token ${SAMPLES.github_token}`
  assert.deepEqual((await call(client, 'up__echo', { text })).content, [{ type: 'text', text }])

  await writeFile(file, config({ results: { secrets: 'block' } }))
  const reloaded = await gw.reload('test')
  assert.ok(reloaded.outcome === 'ok' && reloaded.diff.applied.includes('guardrails'), JSON.stringify(reloaded))
  assert.equal(errorOf(await call(client, 'up__echo', { text })).code, 'SB_ERR_SECRET_IN_RESULT')

  await writeFile(file, config({ results: { secrets: 'off' } }))
  assert.equal((await gw.reload('test')).outcome, 'ok')
  assert.deepEqual((await call(client, 'up__echo', { text })).content, [{ type: 'text', text }])
})
