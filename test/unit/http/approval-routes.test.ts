import { describe, it, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import Fastify, { type FastifyInstance } from 'fastify'
import { adminRoutes } from '../../../src/http/admin-routes.ts'
import { PendingApprovals } from '../../../src/approval/pending-approvals.ts'
import { parseConfig } from '../../../src/config/load-config.ts'

const TOKEN = 'admin-token-for-the-unit-tests'
const AUTH = { authorization: `Bearer ${TOKEN}` }
const REQUEST = { callId: 'call-1', principal: 'alice', tool: 'db__drop', upstream: 'db', arguments: { table: 'users', password: '[redacted]' }, rule: 0 }

async function build (t: TestContext, approvals?: PendingApprovals): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(adminRoutes, {
    token: () => TOKEN,
    reload: async () => ({ outcome: 'invalid', errors: [] }),
    config: () => parseConfig('upstreams: []', {}),
    upstreams: () => [],
    sessions: () => ({ total: 0, byTransport: {}, byPrincipal: {} }),
    reconnect: () => false,
    connections: async () => ({ upstreams: [] }),
    revokeConnection: async () => false,
    approvals
  })
  t.after(() => app.close())
  return app
}

describe('admin approvals routes', () => {
  it('lists the waiting calls and decides one: 200 with the outcome, then 404; 400 for a bad body; 401 without the token', async (t) => {
    const pending = new PendingApprovals()
    const app = await build(t, pending)
    const approval = pending.open(REQUEST, 60_000)
    assert.ok(approval !== undefined)
    t.after(() => { approval.cancel() })
    const { id } = approval

    assert.equal((await app.inject({ method: 'GET', url: '/admin/approvals' })).statusCode, 401)
    assert.equal((await app.inject({ method: 'POST', url: `/admin/approvals/${id}`, payload: { decision: 'approve' } })).statusCode, 401)
    const listed = await app.inject({ method: 'GET', url: '/admin/approvals', headers: AUTH })
    assert.equal(listed.statusCode, 200)
    const [view] = (listed.json() as { approvals: Array<Record<string, unknown>> }).approvals
    assert.deepEqual({ ...view, askedAt: undefined, waitsUntil: undefined }, { id, ...REQUEST, askedAt: undefined, waitsUntil: undefined })

    const bodies: string[] = ['', 'not json at all', JSON.stringify({ decision: 'sure' })]
    for (const body of bodies) {
      const bad = await app.inject({ method: 'POST', url: `/admin/approvals/${id}`, headers: { ...AUTH, 'content-type': 'application/json' }, payload: body })
      assert.equal(bad.statusCode, 400, body)
      assert.equal((bad.json() as { error: string }).error, 'bad_request')
    }
    assert.equal((await app.inject({ method: 'POST', url: '/admin/approvals/unknown', headers: AUTH, payload: { decision: 'approve' } })).statusCode, 404)

    const decided = await app.inject({ method: 'POST', url: `/admin/approvals/${id}`, headers: AUTH, payload: { decision: 'deny', reason: 'freeze' } })
    assert.equal(decided.statusCode, 200)
    assert.deepEqual(decided.json(), { id, outcome: 'denied' })
    assert.deepEqual(await approval.settled, { decision: 'deny', reason: 'freeze' })
    const again = await app.inject({ method: 'POST', url: `/admin/approvals/${id}`, headers: AUTH, payload: { decision: 'approve' } })
    assert.equal(again.statusCode, 404)
    assert.deepEqual((await app.inject({ method: 'GET', url: '/admin/approvals', headers: AUTH })).json(), { approvals: [] })
  })

  it('has no approvals routes when the service has none', async (t) => {
    const app = await build(t)
    assert.equal((await app.inject({ method: 'GET', url: '/admin/approvals', headers: AUTH })).statusCode, 404)
  })
})
