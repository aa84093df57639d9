/* eslint-disable no-template-curly-in-string -- ${VAR} is the config syntax under test */
import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { AUDIENCE, ISSUER, startJwksServer } from '../helpers/jwks-server.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitReady } from '../helpers/start-gateway.ts'
import type { RunningGateway } from '../helpers/start-gateway.ts'

const KEY = 'alice-key-0123456789abcdef'

// echo declares readOnlyHint: true; whoami and add declare no annotations, so they count as writing.
const POLICIES = {
  default: 'deny',
  rules: [
    { principals: ['*'], tools: ['web__whoami', 'web__echo'], annotations: { readOnlyHint: false }, effect: 'deny', description: 'no writers' },
    { principals: ['*'], tools: ['web__echo'], when: "args.path.startsWith('/srv/public/')", effect: 'allow', description: 'public paths' },
    { principals: ['*'], tools: ['web__add'], when: 'args.amount > 100000', effect: 'deny', description: 'never huge amounts' },
    { principals: ['*'], tools: ['web__add'], when: 'args.amount <= 1000', effect: 'allow', description: 'small amounts' },
    { principals: ['*'], tools: ['web__whoami'], effect: 'allow' }
  ]
}

async function gateway (t: TestContext, auth: unknown, policies: unknown = POLICIES): Promise<RunningGateway> {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url }],
    auth,
    policies
  }), { ...process.env, ALICE_KEY: KEY })
  await waitReady(gw)
  return gw
}

interface Answer { isError: boolean, text: string, code: unknown }

async function call (client: Client, name: string, args: Record<string, unknown>): Promise<Answer> {
  const result = await client.callTool({ name, arguments: args })
  const first = (result.content as Array<{ type: string, text?: string }>)[0]
  const error = result._meta?.['switchboard/error'] as { code?: unknown } | undefined
  return { isError: result.isError === true, text: first?.text ?? '', code: error?.code }
}

function assertDenied (answer: Answer, rule: RegExp): void {
  assert.equal(answer.isError, true, answer.text)
  assert.equal(answer.code, 'SB_ERR_POLICY_DENIED')
  assert.match(answer.text, rule)
}

test('when conditions allow and refuse calls by their arguments; the tools stay listed', async (t) => {
  const gw = await gateway(t, { apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }] })
  const client = await connectClient(t, gw.url, {}, { authorization: `Bearer ${KEY}` })

  const listed = (await client.listTools()).tools.map(tool => tool.name)
  for (const name of ['web__echo', 'web__add', 'web__whoami']) assert.ok(listed.includes(name), `${name} is listed: its rules are decided at call time`)

  const inside = await call(client, 'web__echo', { text: 'hello', path: '/srv/public/readme.txt' })
  assert.equal(inside.isError, false, inside.text)
  assert.equal(inside.text, 'hello', 'the upstream answered')
  assertDenied(await call(client, 'web__echo', { text: 'hello', path: '/etc/passwd' }), /^Switchboard: the default of the access policy refuses this call/)
  // No path at all: the allow rule cannot be evaluated, so it does not match; the default denies.
  assertDenied(await call(client, 'web__echo', { text: 'hello' }), /the default of the access policy/)

  const small = await call(client, 'web__add', { a: 1, b: 2, amount: 500 })
  assert.equal(small.isError, false, small.text)
  assertDenied(await call(client, 'web__add', { a: 1, b: 2, amount: 5000 }), /the default of the access policy/)
  assertDenied(await call(client, 'web__add', { a: 1, b: 2, amount: 500000 }), /rule 2 of the access policy refuses this call with these arguments/)
  // A deny rule whose condition fails on the arguments fails closed, and says why.
  assertDenied(await call(client, 'web__add', { a: 1, b: 2, amount: 'lots' }), /rule 2 of the access policy refuses this call because its condition could not be evaluated on these arguments \(.+\)/)

  // whoami declares no readOnlyHint, so the annotations rule treats it as writing; echo says it only reads.
  assertDenied(await call(client, 'web__whoami', {}), /rule 0 of the access policy/)

  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_policy_denials_total', { kind: 'tools', upstream: 'web', name: 'web__add' }), 3)
})

test('principal.claims reads the verified JWT\'s claims; an API key caller has none', async (t) => {
  const jwks = await startJwksServer(t)
  const gw = await gateway(t, {
    apiKeys: [{ id: 'alice', key: '${ALICE_KEY}' }],
    jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, jwksTimeoutMs: 1000 }
  }, {
    default: 'deny',
    rules: [{ principals: ['*'], tools: ['web__whoami'], when: "principal.claims.department == 'finance' && principal.id == 'fran'", effect: 'allow' }]
  })
  const finance = await connectClient(t, gw.url, {}, { authorization: `Bearer ${await jwks.sign({ sub: 'fran', department: 'finance' })}` })
  const sales = await connectClient(t, gw.url, {}, { authorization: `Bearer ${await jwks.sign({ sub: 'fran', department: 'sales' })}` })
  const keyed = await connectClient(t, gw.url, {}, { authorization: `Bearer ${KEY}` })

  const allowed = await call(finance, 'web__whoami', {})
  assert.equal(allowed.isError, false, allowed.text)
  assertDenied(await call(sales, 'web__whoami', {}), /the default of the access policy/)
  assertDenied(await call(keyed, 'web__whoami', {}), /the default of the access policy/)
})
