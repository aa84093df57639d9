import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer, type ControllableServerHandle } from '../fixtures/controllable-server.ts'
import { writeFile } from 'node:fs/promises'
import { tempConfig } from '../helpers/cli.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// Effect ask through the real gateway: an SDK client's user approves or denies in an elicitation
// (or, in 2026-07-28, through input_required), or an operator decides in the admin API while the
// client waits. The upstream is a real MCP server whose call log shows what reached it.

const ADMIN_TOKEN = 'admin-token-0123456789abcdef'
const SECRET = 'sk-live-do-not-show-0123456789'

interface Setup { gw: RunningGateway, web: ControllableServerHandle, admin: string }

async function setup (t: TestContext): Promise<Setup> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    policies: {
      default: 'allow',
      rules: [
        { tools: ['web__echo'], effect: 'ask' },
        { tools: ['web__add'], effect: 'ask', approval: { via: 'operator', timeoutMs: 60_000 } },
        { tools: ['web__whoami'], effect: 'ask', approval: { via: 'operator', timeoutMs: 1000 } },
        { tools: ['web__counter'], effect: 'ask', approval: { via: 'client', timeoutMs: 1000 } }
      ]
    },
    audit: { enabled: true },
    // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
    admin: { listen: { port: 0 }, token: '${SWITCHBOARD_ADMIN_TOKEN}' }
  }), { ...process.env, SWITCHBOARD_ADMIN_TOKEN: ADMIN_TOKEN })
  await waitReady(gw)
  const admin = gw.admin
  assert.ok(admin !== undefined)
  await admin.listen({ host: '127.0.0.1', port: 0 })
  return { gw, web, admin: `http://127.0.0.1:${(admin.server.address() as { port: number }).port}/admin` }
}

type Handler = (params: Record<string, unknown>) => Record<string, unknown> | Promise<Record<string, unknown>>

/** A client declaring form elicitation whose user answers with `answer`; `asked` collects each question. */
async function askingClient (t: TestContext, url: string, answer: Handler, capabilities: Record<string, unknown> = { elicitation: {} }): Promise<{ client: Client, asked: Array<Record<string, unknown>> }> {
  const client = await connectClient(t, url, capabilities)
  const asked: Array<Record<string, unknown>> = []
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params as Record<string, unknown>
    asked.push(params)
    return await answer(params) as { action: 'accept' }
  })
  return { client, asked }
}

const choose = (decision: string): Handler => () => ({ action: 'accept', content: { decision } })

interface ToolResult { isError?: boolean, content?: Array<{ text?: string }>, _meta?: Record<string, { code?: string, reason?: string, rule?: number }> }

const errorCode = (result: unknown): string | undefined => (result as ToolResult)._meta?.['switchboard/error']?.code
const textOf = (result: unknown): string => ((result as ToolResult).content ?? []).map(c => c.text ?? '').join('\n')
const auditLines = (gw: RunningGateway): Array<Record<string, unknown>> => gw.logs.filter(l => l.component === 'audit' && l.msg === 'tool call')
const choices = (question: Record<string, unknown>): unknown =>
  ((question.requestedSchema as { properties: { decision: { oneOf?: Array<{ const: string }> } } }).properties.decision.oneOf ?? []).map(o => o.const)

async function adminFetch (url: string, init: RequestInit = {}): Promise<Response> {
  return await fetch(url, { ...init, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', ...init.headers } })
}

test('a user who approves once: the question names the tool, its upstream and the redacted arguments; the call reaches the upstream, is audited and counted, and the next call is asked again', async (t) => {
  const { gw, web } = await setup(t)
  const { client, asked } = await askingClient(t, gw.url, choose('approve_once'))
  const progress: Array<{ message?: string }> = []
  const result = await client.callTool({ name: 'web__echo', arguments: { text: 'approved', apiToken: SECRET } }, { onprogress: (p) => { progress.push(p) } })
  assert.equal(result.isError, undefined)
  assert.equal(progress[0]?.message, 'waiting for your approval', 'a caller that asked for progress hears what it waits for')
  assert.match(textOf(result), /approved/)
  assert.deepEqual(web.state.stats.calledTools, ['echo'])

  assert.equal(asked.length, 1)
  const question = asked[0] as Record<string, unknown>
  assert.equal(question.mode, 'form')
  assert.match(String(question.message), /tool "web__echo" on upstream "web"/)
  assert.match(String(question.message), /"text": "approved"/)
  assert.match(String(question.message), /"apiToken": "\[redacted\]"/)
  assert.ok(!JSON.stringify(question).includes(SECRET), 'the secret is never shown')
  assert.deepEqual(choices(question), ['approve_once', 'approve_session', 'deny'])
  assert.deepEqual((question.requestedSchema as { required: string[] }).required, ['decision'])

  await client.callTool({ name: 'web__echo', arguments: { text: 'again' } })
  assert.equal(asked.length, 2, 'approved once is once')
  const audit = auditLines(gw)
  assert.equal(audit.length, 2)
  const first = audit[0] as Record<string, unknown>
  assert.equal(first.outcome, 'ok')
  const approval = first.approval as Record<string, unknown>
  assert.deepEqual({ ...approval, waitedMs: typeof approval.waitedMs }, { via: 'client', outcome: 'approved', waitedMs: 'number', rule: 0, by: 'client' })
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_approvals_total', { upstream: 'web', via: 'client', outcome: 'approved' }), 2)
  assert.equal(metricValue(metrics, 'switchboard_approvals_pending', { via: 'client' }), 0)
})

test('the question shows a bidirectional control or zero-width character in the arguments escaped, so the user reads what the call carries', async (t) => {
  const { gw, web } = await setup(t)
  const { client, asked } = await askingClient(t, gw.url, choose('deny'))
  const result = await client.callTool({ name: 'web__echo', arguments: { text: 'rm -rf /\u202E fdp.eman\u200B' } })
  assert.equal(errorCode(result), 'SB_ERR_APPROVAL_DENIED')
  assert.deepEqual(web.state.stats.calledTools, [])
  const message = String((asked[0] as Record<string, unknown>).message)
  assert.match(message, /"text": "rm -rf \/\\u\{202E\} fdp\.eman\\u\{200B\}"/)
  assert.doesNotMatch(message, /[\u202E\u200B]/u, 'no raw bidirectional or zero-width character reaches the user')
  assert.match(message, /\n/, 'the arguments keep their lines')
})

test('a user who denies, declines or cancels: a SB_ERR_APPROVAL_DENIED tool error, and the upstream never sees the call', async (t) => {
  const { gw, web } = await setup(t)
  const answers: Handler[] = [choose('deny'), () => ({ action: 'decline' }), () => ({ action: 'cancel' })]
  const { client, asked } = await askingClient(t, gw.url, async (params) => await (answers.shift() as Handler)(params))
  for (let i = 0; i < 3; i++) {
    const result = await client.callTool({ name: 'web__echo', arguments: { text: 'no' } })
    assert.equal(result.isError, true)
    assert.equal(errorCode(result), 'SB_ERR_APPROVAL_DENIED')
    assert.match(textOf(result), /tool "web__echo" needs a human's approval \(policy rule 0\) and the user denied it; it did not run/)
  }
  assert.equal(asked.length, 3)
  assert.deepEqual(web.state.stats.calledTools, [])
  assert.deepEqual(auditLines(gw).map(l => [l.outcome, (l.approval as { outcome: string }).outcome]), Array(3).fill(['approval_denied', 'denied']))
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_approvals_total', { upstream: 'web', via: 'client', outcome: 'denied' }), 3)
})

test('a user who approves for this session is not asked again in that session; another session is asked', async (t) => {
  const { gw, web } = await setup(t)
  const { client, asked } = await askingClient(t, gw.url, choose('approve_session'))
  for (const text of ['one', 'two', 'three']) assert.match(textOf(await client.callTool({ name: 'web__echo', arguments: { text } })), new RegExp(text))
  assert.equal(asked.length, 1)
  assert.deepEqual(web.state.stats.calledTools, ['echo', 'echo', 'echo'])
  assert.deepEqual(auditLines(gw).map(l => l.approval), [
    { ...(auditLines(gw)[0]?.approval as object), via: 'client', outcome: 'approved_session', by: 'client', rule: 0 },
    { via: 'client', outcome: 'approved_session', waitedMs: 0, rule: 0, by: 'session' },
    { via: 'client', outcome: 'approved_session', waitedMs: 0, rule: 0, by: 'session' }
  ])

  const other = await askingClient(t, gw.url, choose('approve_once'))
  await other.client.callTool({ name: 'web__echo', arguments: { text: 'elsewhere' } })
  assert.equal(other.asked.length, 1, 'the approval belonged to the first session')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_approvals_total', { upstream: 'web', via: 'client', outcome: 'approved_session' }), 1, 'remembered passes are not questions')
})

test('a client that declared no form elicitation gets SB_ERR_APPROVAL_UNAVAILABLE, never a silent allow; URL-only elicitation is not enough', async (t) => {
  const { gw, web } = await setup(t)
  for (const capabilities of [{}, { elicitation: { url: {} } }]) {
    const client = await connectClient(t, gw.url, capabilities)
    const result = await client.callTool({ name: 'web__echo', arguments: { text: 'x' } })
    assert.equal(result.isError, true)
    assert.equal(errorCode(result), 'SB_ERR_APPROVAL_UNAVAILABLE')
    assert.match(textOf(result), /this client cannot be asked: it declared no form elicitation/)
  }
  assert.deepEqual(web.state.stats.calledTools, [])
  // Tools no rule asks about are not affected.
  const client = await connectClient(t, gw.url, {})
  assert.equal((await client.callTool({ name: 'web__fail', arguments: {} })).isError, true)
  assert.deepEqual(web.state.stats.calledTools, ['fail'])
  assert.deepEqual(auditLines(gw).map(l => l.outcome), ['approval_unavailable', 'approval_unavailable', 'tool_error'])
  assert.equal(metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_approvals_total', { upstream: 'web', via: 'client', outcome: 'unavailable' }), 2)
})

test('a user who never answers: SB_ERR_APPROVAL_TIMEOUT after timeoutMs, and the question is withdrawn', async (t) => {
  const { gw, web } = await setup(t)
  const client = await connectClient(t, gw.url, { elicitation: { form: {} } })
  let asked = 0
  client.setRequestHandler('elicitation/create', async (_request, ctx) => {
    asked++
    // The user looks away; the gateway withdraws the question (notifications/cancelled aborts this).
    return await new Promise((_resolve, reject) => { ctx.mcpReq.signal.addEventListener('abort', () => { reject(new Error('withdrawn')) }) })
  })
  const result = await client.callTool({ name: 'web__counter', arguments: {} })
  assert.equal(asked, 1)
  assert.equal(errorCode(result), 'SB_ERR_APPROVAL_TIMEOUT')
  assert.match(textOf(result), /no answer came within 1000 ms; it did not run/)
  assert.deepEqual(web.state.stats.calledTools, [])
  assert.equal((auditLines(gw)[0]?.approval as { outcome?: string }).outcome, 'timeout')
})

test('a 2026-07-28 client answers the question through input_required; it is offered no "for this session"', { timeout: 60_000 }, async (t) => {
  const { gw, web } = await setup(t)
  const asked: Array<Record<string, unknown>> = []
  const answers = ['approve_once', 'deny']
  const client = new Client({ name: 'modern', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: MODERN } } })
  client.setRequestHandler('elicitation/create', (request) => {
    asked.push(request.params as Record<string, unknown>)
    return { action: 'accept', content: { decision: answers.shift() ?? 'deny' } }
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)))
  t.after(async () => { await client.close().catch(() => {}) })

  const approved = await client.callTool({ name: 'web__echo', arguments: { text: 'modern approval' } })
  assert.match(textOf(approved), /modern approval/)
  const denied = await client.callTool({ name: 'web__echo', arguments: { text: 'modern denial' } })
  assert.equal(errorCode(denied), 'SB_ERR_APPROVAL_DENIED')
  assert.equal(asked.length, 2)
  assert.deepEqual(choices(asked[0] as Record<string, unknown>), ['approve_once', 'deny'])
  assert.deepEqual(web.state.stats.calledTools, ['echo'])
  assert.equal(gw.gateway.sessions.size, 0, 'no session at any point')
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_input_required_total', { outcome: 'asked' }), 2)
})

test('an operator approves through the admin API while the client waits with progress; a decided or unknown id is 404, a bad body 400', async (t) => {
  const { gw, web, admin } = await setup(t)
  const client = await connectClient(t, gw.url, {})
  const progress: Array<{ progress: number, message?: string }> = []
  const waiting = client.callTool({ name: 'web__add', arguments: { a: 2, b: 3, password: SECRET } }, { onprogress: (p) => { progress.push(p) } })

  const listed = await waitFor(async () => {
    const body = await (await adminFetch(`${admin}/approvals`)).json() as { approvals: Array<Record<string, unknown>> }
    return body.approvals.length > 0 ? body.approvals : undefined
  }, 'the pending approval')
  assert.equal(listed.length, 1)
  const pending = listed[0] as Record<string, unknown>
  assert.equal(pending.principal, 'anonymous')
  assert.equal(pending.tool, 'web__add')
  assert.equal(pending.upstream, 'web')
  assert.equal(pending.rule, 1)
  assert.deepEqual(pending.arguments, { a: 2, b: 3, password: '[redacted]' })
  assert.equal(typeof pending.callId, 'string')
  assert.equal(Date.parse(String(pending.waitsUntil)) - Date.parse(String(pending.askedAt)), 60_000)
  await waitFor(() => progress.length > 0, 'a progress notification')
  assert.match(String(progress[0]?.message), new RegExp(`waiting for an operator's approval \\(approval ${String(pending.id)}\\)`))

  assert.equal((await fetch(`${admin}/approvals`)).status, 401, 'behind the admin token')
  const bad = await adminFetch(`${admin}/approvals/${String(pending.id)}`, { method: 'POST', body: JSON.stringify({ decision: 'maybe' }) })
  assert.equal(bad.status, 400)
  assert.match(((await bad.json()) as { message: string }).message, /decision must be "approve" or "deny"/)
  assert.equal((await adminFetch(`${admin}/approvals/no-such-id`, { method: 'POST', body: JSON.stringify({ decision: 'approve' }) })).status, 404)
  assert.deepEqual(web.state.stats.calledTools, [], 'nothing ran while it waited')

  const decided = await adminFetch(`${admin}/approvals/${String(pending.id)}`, { method: 'POST', body: JSON.stringify({ decision: 'approve', reason: 'ticket OPS-42' }) })
  assert.equal(decided.status, 200)
  assert.deepEqual(await decided.json(), { id: pending.id, outcome: 'approved' })
  const result = await waiting
  assert.equal(result.isError, undefined)
  assert.match(textOf(result), /5/)
  assert.deepEqual(web.state.stats.calledTools, ['add'])
  assert.equal((await adminFetch(`${admin}/approvals/${String(pending.id)}`, { method: 'POST', body: JSON.stringify({ decision: 'deny' }) })).status, 404, 'decided already')
  assert.deepEqual(await (await adminFetch(`${admin}/approvals`)).json(), { approvals: [] })

  const line = auditLines(gw)[0] as Record<string, unknown>
  assert.equal(line.callId, pending.callId)
  const approval = line.approval as Record<string, unknown>
  assert.deepEqual({ ...approval, waitedMs: typeof approval.waitedMs }, { via: 'operator', outcome: 'approved', waitedMs: 'number', rule: 1, by: 'operator', id: pending.id, reason: 'ticket OPS-42' })
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_approvals_total', { upstream: 'web', via: 'operator', outcome: 'approved' }), 1)
  assert.equal(metricValue(metrics, 'switchboard_approvals_pending', { via: 'operator' }), 0)
})

test('an operator denies with a reason the caller reads; a call nobody decides times out with SB_ERR_APPROVAL_TIMEOUT; a cancelled call is withdrawn', async (t) => {
  const { gw, web, admin } = await setup(t)
  const client = await connectClient(t, gw.url, {})
  const pendingIds = async (): Promise<string[]> => ((await (await adminFetch(`${admin}/approvals`)).json()) as { approvals: Array<{ id: string }> }).approvals.map(a => a.id)

  const waiting = client.callTool({ name: 'web__add', arguments: { a: 1, b: 1 } })
  const [id] = await waitFor(async () => { const ids = await pendingIds(); return ids.length > 0 ? ids : undefined }, 'the pending approval')
  assert.equal((await adminFetch(`${admin}/approvals/${String(id)}`, { method: 'POST', body: JSON.stringify({ decision: 'deny', reason: 'not during the freeze' }) })).status, 200)
  const denied = await waiting
  assert.equal(errorCode(denied), 'SB_ERR_APPROVAL_DENIED')
  assert.match(textOf(denied), /an operator denied it: "not during the freeze"; it did not run/)

  const timedOut = await client.callTool({ name: 'web__whoami', arguments: {} })
  assert.equal(errorCode(timedOut), 'SB_ERR_APPROVAL_TIMEOUT')
  assert.match(textOf(timedOut), /no operator decided within 1000 ms; it did not run/)
  assert.deepEqual(await pendingIds(), [], 'an expired approval is gone')

  const abort = new AbortController()
  const cancelled = client.callTool({ name: 'web__add', arguments: { a: 0, b: 0 } }, { signal: abort.signal }).then(() => 'answered', () => 'rejected')
  await waitFor(async () => (await pendingIds()).length > 0, 'the pending approval')
  abort.abort()
  assert.equal(await cancelled, 'rejected')
  await waitFor(async () => (await pendingIds()).length === 0, 'the cancelled approval withdrawn')

  assert.deepEqual(web.state.stats.calledTools, [])
  const metrics = await scrapeMetrics(gw.baseUrl)
  for (const outcome of ['denied', 'timeout']) assert.equal(metricValue(metrics, 'switchboard_approvals_total', { via: 'operator', outcome }), 1, outcome)
  await waitFor(async () => metricValue(await scrapeMetrics(gw.baseUrl), 'switchboard_approvals_total', { via: 'operator', outcome: 'cancelled' }) === 1, 'the cancellation counted')
  assert.deepEqual(auditLines(gw).map(l => [l.outcome, (l.approval as { outcome: string }).outcome]), [['approval_denied', 'denied'], ['approval_timeout', 'timeout'], ['cancelled', 'cancelled']])
})

test('a reload that changes the policies forgets every "approve for this session": the new rules ask afresh', async (t) => {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const config = (timeoutMs: number): string => JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    policies: { rules: [{ tools: ['web__echo'], effect: 'ask', approval: { timeoutMs } }] }
  })
  const file = await tempConfig(t, config(60_000))
  const gw = await startGateway(t, config(60_000), process.env, file)
  await waitReady(gw)
  const { client, asked } = await askingClient(t, gw.url, choose('approve_session'))
  await client.callTool({ name: 'web__echo', arguments: { text: 'a' } })
  await client.callTool({ name: 'web__echo', arguments: { text: 'b' } })
  assert.equal(asked.length, 1)
  await writeFile(file, config(30_000))
  assert.equal((await gw.reload('test')).outcome, 'ok')
  await client.callTool({ name: 'web__echo', arguments: { text: 'c' } })
  assert.equal(asked.length, 2, 'asked again after the policies changed')
  assert.deepEqual(web.state.stats.calledTools, ['echo', 'echo', 'echo'])
})
