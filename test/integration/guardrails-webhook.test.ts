import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Client } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import type { ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { freePort } from '../helpers/free-port.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'
import { SAMPLES } from '../helpers/sample-secrets.ts'

const HOOK_KEY = 'hook-key-5f0c2a9e71d4'

interface Asked { body: Record<string, unknown>, headers: IncomingHttpHeaders }
/** What the hook answers: a status and a body, or 'hang' (never answers). */
type Answer = { status?: number, body: unknown } | 'hang'

/** A guardrail hook: a real HTTP server on loopback that records what it is asked and answers as told. */
async function startHook (t: TestContext, answer: (asked: Asked) => Answer): Promise<{ url: string, asked: Asked[] }> {
  const asked: Asked[] = []
  const hanging: ServerResponse[] = []
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const one = { body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>, headers: req.headers }
      asked.push(one)
      const reply = answer(one)
      if (reply === 'hang') {
        hanging.push(res)
        return
      }
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' })
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    for (const res of hanging) res.destroy()
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/check`, asked }
}

interface Setup { gw: RunningGateway, upstream: ControllableServerHandle, client: Client }

async function setup (t: TestContext, guardrails: Record<string, unknown>): Promise<Setup> {
  const upstream = await startControllableHttpServer({ name: 'up' })
  t.after(() => upstream.close())
  const gw = await startGateway(t, JSON.stringify({ upstreams: [{ name: 'up', transport: 'streamable-http', url: upstream.url }], guardrails }), { ...process.env, HOOK_KEY })
  await waitReady(gw)
  return { gw, upstream, client: await connectClient(t, gw.url) }
}

// eslint-disable-next-line no-template-curly-in-string -- the config's ${VAR} syntax
const HEADERS = { 'X-Hook-Key': '${HOOK_KEY}' }

interface ToolResult { content: Array<{ type: string, text?: string }>, structuredContent?: Record<string, unknown>, isError?: boolean, _meta?: Record<string, unknown> }

async function echo (client: Client, text: string): Promise<ToolResult> {
  return await client.callTool({ name: 'up__echo', arguments: { text } }) as ToolResult
}

function errorOf (result: ToolResult): Record<string, unknown> {
  assert.equal(result.isError, true, JSON.stringify(result))
  return result._meta?.['switchboard/error'] as Record<string, unknown>
}

async function hookCount (gw: RunningGateway, on: string, outcome: string): Promise<number | undefined> {
  return metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_guardrail_webhook_total', { on, outcome })
}

test('a hook that denies: the call never reaches the upstream and the client reads the reason', async (t) => {
  const hook = await startHook(t, () => ({ body: { decision: 'deny', reason: 'no echoing on Fridays' } }))
  const { gw, upstream, client } = await setup(t, { webhook: { url: hook.url, headers: HEADERS } })
  const refused = await echo(client, 'hello')
  assert.deepEqual(errorOf(refused), { code: 'SB_ERR_GUARDRAIL_DENIED', upstream: 'up', reason: 'no echoing on Fridays' })
  assert.match(refused.content[0]?.text ?? '', /the guardrail hook refused this call of tool "up__echo": no echoing on Fridays/)
  assert.deepEqual(upstream.state.stats.calledTools, [])

  assert.equal(hook.asked.length, 1)
  const [{ body, headers }] = hook.asked as [Asked]
  assert.equal(typeof body.callId, 'string')
  assert.deepEqual({ ...body, callId: 'x' }, { phase: 'request', callId: 'x', principal: { id: 'anonymous', roles: [] }, tool: { name: 'up__echo', upstream: 'up' }, arguments: { text: 'hello' } })
  assert.equal(headers['x-hook-key'], HOOK_KEY)
  assert.equal(headers['content-type'], 'application/json')
  const audit = gw.logs.find(l => l.component === 'audit')
  assert.equal(audit?.callId, body.callId, 'the hook and the audit line share the call id')
  assert.equal(audit?.outcome, 'guardrail')
  assert.equal(await hookCount(gw, 'request', 'deny'), 1)
})

test('a hook that rewrites the arguments: the upstream gets the new ones', async (t) => {
  const hook = await startHook(t, ({ body }) => ({ body: { decision: 'replace', arguments: { text: `${String((body.arguments as { text: string }).text)}, checked` } } }))
  const { gw, upstream, client } = await setup(t, { webhook: { url: hook.url } })
  const result = await echo(client, 'hello')
  assert.deepEqual(result.content, [{ type: 'text', text: 'hello, checked' }])
  assert.deepEqual(upstream.state.stats.calledTools, ['echo'])
  assert.deepEqual(gw.logs.find(l => l.component === 'audit')?.outcome, 'ok')
  assert.equal(await hookCount(gw, 'request', 'replace'), 1)
})

test('a hook on results sees the call and its result and may replace it; the replacement is scanned for secrets too', async (t) => {
  const hook = await startHook(t, ({ body }) => body.phase === 'request'
    ? { body: { decision: 'allow' } }
    : { body: { decision: 'replace', result: { content: [{ type: 'text', text: `summary; token=${SAMPLES.github_token}` }], structuredContent: { text: 'summary' } } } })
  const { gw, client } = await setup(t, { webhook: { url: hook.url, on: ['request', 'result'] }, results: { secrets: 'redact' } })
  const result = await echo(client, 'a long answer')
  assert.deepEqual(result.content, [{ type: 'text', text: 'summary; token=[redacted:github_token]' }])
  assert.deepEqual(result.structuredContent, { text: 'summary' })
  assert.deepEqual(hook.asked.map(a => a.body.phase), ['request', 'result'])
  const [request, answered] = hook.asked as [Asked, Asked]
  assert.equal(answered.body.callId, request.body.callId)
  assert.deepEqual(answered.body.arguments, { text: 'a long answer' })
  assert.deepEqual(answered.body.result, { content: [{ type: 'text', text: 'a long answer' }], structuredContent: { text: 'a long answer' } })
  assert.equal(await hookCount(gw, 'request', 'allow'), 1)
  assert.equal(await hookCount(gw, 'result', 'replace'), 1)
})

test('a hook that denies a result: the tool ran, its answer is withheld', async (t) => {
  const hook = await startHook(t, () => ({ body: { decision: 'deny', reason: 'contains customer data' } }))
  const { upstream, client } = await setup(t, { webhook: { url: hook.url, on: ['result'] } })
  const refused = await echo(client, 'jane@example.com')
  assert.deepEqual(errorOf(refused), { code: 'SB_ERR_GUARDRAIL_DENIED', upstream: 'up', reason: 'contains customer data' })
  assert.match(refused.content[0]?.text ?? '', /refused the result of tool "up__echo": contains customer data/)
  assert.deepEqual(upstream.state.stats.calledTools, ['echo'])
})

test('a hook that does not answer in time: failMode open lets the call through, closed refuses it; both counted and logged once, without the headers', async (t) => {
  const hook = await startHook(t, () => 'hang')
  const open = await setup(t, { webhook: { url: hook.url, timeoutMs: 100, failMode: 'open', headers: HEADERS } })
  const through = await echo(open.client, 'hello')
  assert.deepEqual(through.content, [{ type: 'text', text: 'hello' }])
  assert.deepEqual(open.upstream.state.stats.calledTools, ['echo'])
  assert.equal(await hookCount(open.gw, 'request', 'timeout'), 1)
  const warned = open.gw.logs.filter(l => l.component === 'guardrails')
  assert.equal(warned.length, 1)
  assert.equal(warned[0]?.msg, 'the guardrail hook gave no verdict; failMode open lets the call through')
  assert.equal(warned[0]?.outcome, 'timeout')
  assert.equal(warned[0]?.url, hook.url)

  const closed = await setup(t, { webhook: { url: hook.url, timeoutMs: 100, failMode: 'closed', headers: HEADERS } })
  const refused = await echo(closed.client, 'hello')
  assert.deepEqual(errorOf(refused), { code: 'SB_ERR_GUARDRAIL_UNAVAILABLE', upstream: 'up', reason: 'timeout' })
  assert.match(refused.content[0]?.text ?? '', /could not be asked \(timeout\) and guardrails.webhook.failMode is closed; the call was not sent to the upstream/)
  assert.deepEqual(closed.upstream.state.stats.calledTools, [])
  assert.equal(await hookCount(closed.gw, 'request', 'timeout'), 1)
  assert.equal(closed.gw.logs.filter(l => l.component === 'guardrails').length, 1)
  for (const gw of [open.gw, closed.gw]) {
    assert.ok(!JSON.stringify(gw.logs).includes(HOOK_KEY), 'the hook\'s header never reaches a log line')
    assert.ok(!(await (await fetch(`${gw.baseUrl}/metrics`)).text()).includes(HOOK_KEY))
  }
  assert.equal(hook.asked.length, 2)
  assert.equal(hook.asked[0]?.headers['x-hook-key'], HOOK_KEY)
})

test('garbage, wrong verdicts, HTTP errors and a closed port are failures of the hook: closed refuses each, counted by kind', async (t) => {
  const answers: Answer[] = [
    { body: 'this is not JSON' },
    { body: { decision: 'maybe' } },
    { body: { decision: 'replace', result: { content: 'not a list' } } },
    { status: 500, body: { decision: 'allow' } },
    { body: { decision: 'allow' } }
  ]
  let next = 0
  const hook = await startHook(t, () => answers[next++] ?? { body: { decision: 'allow' } })
  const { gw, upstream, client } = await setup(t, { webhook: { url: hook.url, on: ['request'] } })
  const reasons: unknown[] = []
  for (let i = 0; i < 4; i++) reasons.push(errorOf(await echo(client, `try ${i}`)).reason)
  // A request-side verdict that replaces the result is not a request verdict: invalid too.
  assert.deepEqual(reasons, ['invalid', 'invalid', 'invalid', 'error'])
  assert.equal((await echo(client, 'fine')).isError, undefined)
  assert.deepEqual(upstream.state.stats.calledTools, ['echo'])
  assert.equal(await hookCount(gw, 'request', 'invalid'), 3)
  assert.equal(await hookCount(gw, 'request', 'error'), 1)
  assert.equal(await hookCount(gw, 'request', 'allow'), 1)
  const details = gw.logs.filter(l => l.component === 'guardrails').map(l => l.detail)
  assert.deepEqual(details.slice(0, 2), ['the answer is not JSON', details[1]])
  assert.match(String(details[1]), /^the answer is not a request verdict/)
  assert.equal(details[3], 'HTTP 500')

  const port = await freePort()
  const nobody = await setup(t, { webhook: { url: `http://127.0.0.1:${port}/check`, failMode: 'closed' } })
  assert.equal(errorOf(await echo(nobody.client, 'x')).reason, 'error')
  assert.equal(await hookCount(nobody.gw, 'request', 'error'), 1)
})

test('an allow that carries rewritten arguments is no verdict: failMode decides, and the warning names the unknown field', async (t) => {
  const hook = await startHook(t, () => ({ body: { decision: 'allow', arguments: { text: 'rewritten by the hook' } } }))
  const closed = await setup(t, { webhook: { url: hook.url, failMode: 'closed' } })
  const refused = await echo(closed.client, 'hello')
  assert.deepEqual(errorOf(refused), { code: 'SB_ERR_GUARDRAIL_UNAVAILABLE', upstream: 'up', reason: 'invalid' })
  assert.deepEqual(closed.upstream.state.stats.calledTools, [])
  assert.equal(await hookCount(closed.gw, 'request', 'invalid'), 1)
  assert.equal(await hookCount(closed.gw, 'request', 'allow'), 0)
  const [warned, ...more] = closed.gw.logs.filter(l => l.component === 'guardrails')
  assert.equal(more.length, 0)
  assert.equal(warned?.level, 40)
  assert.equal(warned?.outcome, 'invalid')
  assert.deepEqual(warned?.unknownFields, ['arguments'])
  assert.match(String(warned?.detail), /unknown field "arguments"/)

  const open = await setup(t, { webhook: { url: hook.url, failMode: 'open' } })
  // Open lets the call through as it came: the hook's arguments were never a verdict.
  assert.deepEqual((await echo(open.client, 'hello')).content, [{ type: 'text', text: 'hello' }])
  const [warnedOpen] = open.gw.logs.filter(l => l.component === 'guardrails')
  assert.equal(warnedOpen?.msg, 'the guardrail hook gave no verdict; failMode open lets the call through')
  assert.deepEqual(warnedOpen?.unknownFields, ['arguments'])
})

test('the hook never sees arguments the gateway refuses for a secret', async (t) => {
  const hook = await startHook(t, () => ({ body: { decision: 'allow' } }))
  const { upstream, client } = await setup(t, { webhook: { url: hook.url }, arguments: { secrets: 'block' } })
  assert.equal(errorOf(await echo(client, `token ${SAMPLES.slack_token}`)).code, 'SB_ERR_SECRET_IN_ARGUMENTS')
  assert.equal(hook.asked.length, 0)
  assert.equal((await echo(client, 'fine')).isError, undefined)
  assert.deepEqual(hook.asked.map(a => a.body.arguments), [{ text: 'fine' }])
  assert.deepEqual(upstream.state.stats.calledTools, ['echo'])
})
