import { test } from 'node:test'
import assert from 'node:assert/strict'
import type { Client } from '@modelcontextprotocol/client'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { AUDIENCE, ISSUER, startJwksServer } from '../helpers/jwks-server.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitReady } from '../helpers/start-gateway.ts'

const ALICE_KEY = 'alice-key-0123456789abcdef'
const BOB_KEY = 'bob-key-0123456789abcdef01'
const SERVICE_KEY = 'service-key-of-the-gateway'

/** What the upstream saw of a whoami call: the HTTP headers of the request that carried it. */
async function seenBy (client: Client): Promise<Record<string, string>> {
  const result = await client.callTool({ name: 'web__whoami', arguments: {} })
  const structured = result.structuredContent as { headers?: Record<string, string> } | undefined
  assert.ok(structured?.headers !== undefined, 'the upstream echoes its headers')
  return structured.headers
}

test('isolation principal: each principal has its own upstream session, shared by their sessions, and no client credential reaches the upstream', async (t) => {
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  const jwks = await startJwksServer(t)
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url, isolation: 'principal', headers: { 'x-service-key': SERVICE_KEY } }],
    auth: {
      apiKeys: [{ id: 'alice', key: ALICE_KEY }, { id: 'bob', key: BOB_KEY }],
      jwt: { issuer: ISSUER, audience: AUDIENCE, jwksUri: jwks.url, jwksTimeoutMs: 1000 }
    }
  }))
  await waitReady(gw)
  const carolJwt = await jwks.sign({ sub: 'carol' })
  const alice1 = await connectClient(t, gw.url, {}, { authorization: `Bearer ${ALICE_KEY}` })
  const alice2 = await connectClient(t, gw.url, {}, { authorization: `Bearer ${ALICE_KEY}` })
  const bob = await connectClient(t, gw.url, {}, { authorization: `Bearer ${BOB_KEY}` })
  const carol = await connectClient(t, gw.url, {}, { authorization: `Bearer ${carolJwt}` })

  const seen = { alice1: await seenBy(alice1), alice2: await seenBy(alice2), bob: await seenBy(bob), carol: await seenBy(carol) }
  const upstreamSession = (h: Record<string, string>): string | undefined => h['mcp-session-id']
  assert.ok(upstreamSession(seen.alice1) !== undefined)
  assert.equal(upstreamSession(seen.alice1), upstreamSession(seen.alice2), 'both of alice\'s sessions use her one connection')
  assert.equal(new Set([seen.alice1, seen.bob, seen.carol].map(upstreamSession)).size, 3, 'alice, bob and carol each have their own upstream session')

  for (const [who, headers] of Object.entries(seen)) {
    assert.equal(headers['x-service-key'], SERVICE_KEY, `${who}: the upstream's own credential is sent`)
    const everything = JSON.stringify(headers)
    for (const secret of [ALICE_KEY, BOB_KEY, carolJwt]) assert.ok(!everything.includes(secret), `${who}: no client credential reaches the upstream`)
  }

  const status = gw.gateway.pool.status()[0]
  assert.equal(status?.principalConnections, 3)
  assert.equal(status?.sessionConnections, 0)
  const metrics = await scrapeMetrics(gw.baseUrl)
  assert.equal(metricValue(metrics, 'switchboard_principal_connections', { upstream: 'web' }), 3)

  // Carol's JWT travels with her requests to her connection, for a token exchange to trade; an API key never does.
  const sessionOf = (id: string) => [...gw.gateway.sessions.all()].find(s => s.principal.id === id)
  const carolSession = sessionOf('carol')
  const aliceSession = sessionOf('alice')
  assert.ok(carolSession !== undefined && aliceSession !== undefined)
  assert.equal(gw.gateway.pool.connectionFor('web', carolSession)?.who()?.token?.reveal(), carolJwt)
  assert.equal(gw.gateway.pool.connectionFor('web', aliceSession)?.who()?.token, undefined)
  assert.equal(gw.gateway.pool.connectionFor('web', aliceSession)?.who()?.principal.id, 'alice')
  assert.ok(!JSON.stringify(gw.logs).includes(carolJwt), 'the JWT is never logged')
})
