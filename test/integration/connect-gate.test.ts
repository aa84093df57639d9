import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { ConnectFlowsDouble, browseConnect } from '../helpers/connect-flows-double.ts'
import { MODERN } from '../helpers/modern-era.ts'
import { CredentialProviders } from '../../src/credentials/credential-providers.ts'
import { StaticCredentialProvider } from '../../src/credentials/static-credential-provider.ts'
import { readEvents } from '../helpers/sse-events.ts'
import { rawPost, startGateway, waitFor, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// The connect gate through the real gateway and the official SDK client: a caller who has not
// connected their account at a per-user OAuth upstream is asked to inside the protocol. The
// ConnectFlows is the test's own double of the gateway's seam; the test plays browser and
// authorization server.

const KEY = 'alice-key-0123456789abcdef'
const AS_ALICE = { authorization: `Bearer ${KEY}` }
const ALICE = { id: 'alice', roles: [], via: 'api-key' } as const

// A listing credential, so the catalog (prompts too) is there before anyone connects; without one
// the first user's call lists it (test/integration/upstream-identity.test.ts).
const LISTING = { headers: { 'x-listing': 'service-credential' } }

// The gate is under test, not OAuth: the upstream (which checks no token) gets its static headers
// whatever the auth type (test/integration/upstream-identity.test.ts runs the real providers).
const GATE_ONLY = new CredentialProviders({ oauth: () => new StaticCredentialProvider() })

interface Setup { gw: RunningGateway, flows: ConnectFlowsDouble }

async function setup (t: TestContext, extra: Record<string, unknown> = {}, more: Array<Record<string, unknown>> = []): Promise<Setup> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const flows = new ConnectFlowsDouble(['web'])
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url, auth: { type: 'oauth', clientId: 'switchboard', listing: LISTING } }, ...more],
    auth: { apiKeys: [{ id: 'alice', key: KEY }] },
    audit: { enabled: true },
    ...extra
  }), process.env, undefined, { connect: { flows, needsConnect: flows.needsConnect }, credentials: GATE_ONLY })
  flows.base = gw.baseUrl
  await waitReady(gw)
  return { gw, flows }
}

async function client (t: TestContext, url: string, capabilities: Record<string, unknown>): Promise<Client> {
  const c = new Client({ name: 'test-client', version: '1.0.0' }, { capabilities })
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: AS_ALICE } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

const textOf = (result: unknown): string => JSON.stringify((result as { content?: unknown }).content)
const auditLines = (gw: RunningGateway): Array<Record<string, unknown>> => gw.logs.filter(l => l.component === 'audit' && l.msg === 'tool call')

test('a client declaring URL elicitation is asked to connect, the call waits for the callback, then gets elicitation/complete with the same id and the tool\'s result', async (t) => {
  const { gw } = await setup(t)
  const c = await client(t, gw.url, { elicitation: { url: {} } })
  const asked: Array<Record<string, unknown>> = []
  const browsed: Array<Promise<{ status: number, page: string }>> = []
  c.setRequestHandler('elicitation/create', (request) => {
    const params = request.params as Record<string, unknown>
    asked.push(params)
    // The user opens the URL after agreeing; the client answers at once.
    browsed.push(browseConnect(String(params.url), KEY))
    return { action: 'accept' }
  })
  const completed: string[] = []
  c.setNotificationHandler('notifications/elicitation/complete', (notification) => { completed.push(String(notification.params.elicitationId)) })

  const result = await c.callTool({ name: 'web__echo', arguments: { text: 'after connect' } })
  assert.match(textOf(result), /after connect/)
  assert.equal(asked.length, 1)
  const params = asked[0] as Record<string, unknown>
  assert.equal(params.mode, 'url')
  assert.equal(params.message, 'Connect your web account to continue')
  assert.match(String(params.url), new RegExp(`^${gw.baseUrl}/connect/web\\?link=`))
  const page = await browsed[0]
  assert.equal(page?.status, 200)
  assert.match(page?.page ?? '', /Connected to web\. You can close this page\./)
  await waitFor(() => completed.length > 0, 'notifications/elicitation/complete')
  assert.deepEqual(completed, [params.elicitationId])

  // Connected now: the next call goes straight through.
  assert.match(textOf(await c.callTool({ name: 'web__echo', arguments: { text: 'again' } })), /again/)
  assert.equal(asked.length, 1)
  const audit = auditLines(gw)
  assert.deepEqual(audit.map(l => [l.outcome, l.auth, l.connect]), [['ok', 'oauth', 'required'], ['ok', 'oauth', undefined]])
})

test('a client without URL elicitation gets -32042 with the connect URL in data.elicitations and the message; prompts/get too', async (t) => {
  const { gw, flows } = await setup(t)
  const c = await client(t, gw.url, { elicitation: { form: {} } })
  const err = await c.callTool({ name: 'web__echo', arguments: { text: 'x' } }).then(() => undefined, (e: unknown) => e) as { code?: number, message?: string, data?: { elicitations?: Array<Record<string, unknown>> } } | undefined
  assert.equal(err?.code, -32042)
  const elicitation = err?.data?.elicitations?.[0]
  assert.equal(elicitation?.mode, 'url')
  assert.match(String(elicitation?.url), new RegExp(`^${gw.baseUrl}/connect/web\\?link=`))
  assert.equal(typeof elicitation?.elicitationId, 'string')
  assert.ok(err?.message?.includes(String(elicitation?.url)), 'the URL is in the message too')

  const prompt = await c.getPrompt({ name: 'web__plain' }).then(() => undefined, (e: unknown) => e) as { code?: number, data?: { elicitations?: Array<{ url?: string }> } } | undefined
  assert.equal(prompt?.code, -32042)
  assert.match(String(prompt?.data?.elicitations?.[0]?.url), /\/connect\/web\?link=/)
  assert.deepEqual(auditLines(gw).map(l => [l.outcome, l.connect]), [['connect_required', 'required']])

  // The URL works for a human: following it connects, and the call then goes through.
  assert.equal((await browseConnect(String(elicitation?.url), KEY)).status, 200)
  assert.ok(flows.grants.size === 1)
  assert.match(textOf(await c.callTool({ name: 'web__echo', arguments: { text: 'now' } })), /now/)
})

test('a user who declines (or cancels) the URL elicitation gets -32042 and nothing is connected', async (t) => {
  const { gw, flows } = await setup(t)
  const c = await client(t, gw.url, { elicitation: { url: {} } })
  const answers: Array<'decline' | 'cancel'> = ['decline', 'cancel']
  c.setRequestHandler('elicitation/create', () => ({ action: answers.shift() ?? 'decline' }))
  for (let i = 0; i < 2; i++) {
    const err = await c.callTool({ name: 'web__echo', arguments: { text: 'x' } }).then(() => undefined, (e: unknown) => e) as { code?: number, data?: { elicitations?: Array<{ url?: string }> } } | undefined
    assert.equal(err?.code, -32042)
    assert.match(String(err?.data?.elicitations?.[0]?.url), /\/connect\/web\?link=/)
  }
  assert.equal(flows.grants.size, 0)
  assert.deepEqual(auditLines(gw).map(l => l.outcome), ['connect_required', 'connect_required'])
})

interface Rpc { id?: unknown, method?: string, params?: Record<string, unknown>, result?: Record<string, unknown>, error?: { code: number, message: string, data?: Record<string, unknown> } }

/** A 2026-07-28 tools/call; its answer, and what came before it on the stream (`notes`). */
async function modernCall (url: string, id: number, extra: Record<string, unknown> = {}): Promise<Rpc & { notes: Rpc[] }> {
  const res = await rawPost(url, {
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'web__echo', arguments: { text: 'modern' }, ...extra, _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { url: {} } } } }
  }, { ...AS_ALICE, 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'web__echo' })
  assert.equal(res.status, 200)
  if (res.headers.get('content-type')?.startsWith('text/event-stream') !== true) return { ...await res.json() as Rpc, notes: [] }
  const messages = (await readEvents(res, events => events.some(e => e.data.includes('"result"') || e.data.includes('"error"'))))
    .filter(e => e.data !== '').map(e => JSON.parse(e.data) as Rpc)
  const answer = messages.find(m => m.id !== undefined) ?? {}
  return { ...answer, notes: messages.filter(m => m.id === undefined) }
}

test('a 2026-07-28 client gets input_required carrying the URL elicitation; its retry after the connect gets the result', async (t) => {
  const { gw, flows } = await setup(t, { http: { modernClients: true } })
  const first = await modernCall(gw.url, 1)
  assert.equal(first.result?.resultType, 'input_required')
  const inputRequests = first.result?.inputRequests as Record<string, { method: string, params: Record<string, unknown> }>
  const [key] = Object.keys(inputRequests)
  const asked = inputRequests[key as string]
  assert.equal(asked?.method, 'elicitation/create')
  assert.equal(asked?.params.mode, 'url')
  assert.match(String(asked?.params.url), /\/connect\/web\?link=/)

  assert.equal((await browseConnect(String(asked?.params.url), KEY)).status, 200)
  assert.equal(flows.grants.size, 1)
  const done = await modernCall(gw.url, 2, { inputResponses: { [key as string]: { action: 'accept' } }, requestState: first.result?.requestState })
  assert.equal(done.result?.resultType, 'complete')
  assert.match(JSON.stringify(done.result?.content), /modern/)
  assert.deepEqual(done.notes.map(n => [n.method, n.params?.elicitationId]), [['notifications/elicitation/complete', asked?.params.elicitationId]])
  assert.deepEqual(auditLines(gw).map(l => [l.outcome, l.connect]), [['ok', 'required']])
  // Connected: the next request of the era needs no question.
  assert.equal((await modernCall(gw.url, 3)).result?.resultType, 'complete')
})

test('a caller who already has a grant is never asked, and an upstream without oauth is not gated', async (t) => {
  const plain = await startControllableHttpServer({ name: 'plain' })
  t.after(() => plain.close())
  const { gw, flows } = await setup(t, {}, [{ name: 'plain', transport: 'streamable-http', url: plain.url }])
  const c = await client(t, gw.url, {})
  assert.match(textOf(await c.callTool({ name: 'plain__echo', arguments: { text: 'ungated' } })), /ungated/)
  flows.grant('web', ALICE)
  assert.match(textOf(await c.callTool({ name: 'web__echo', arguments: { text: 'granted' } })), /granted/)
  assert.deepEqual(auditLines(gw).map(l => [l.tool, l.outcome, l.auth, l.connect]), [['plain__echo', 'ok', 'static', undefined], ['web__echo', 'ok', 'oauth', undefined]])
})
