import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ANONYMOUS, type Principal } from '../../../src/auth/principal.ts'
import { DEFAULT_LIMITS } from '../../../src/config/limits-schema.ts'
import type { UpstreamConfig } from '../../../src/config/schema.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { toRpcResponse, toToolResult } from '../../../src/protocol/error-forms.ts'
import { type SessionSlotLimit, SessionSlots, type SharedProcesses } from '../../../src/upstream/session-slots.ts'
import type { UpstreamConnection } from '../../../src/upstream/upstream-connection.ts'

const alice: Principal = { id: 'alice', roles: [], via: 'api-key' }
const bob: Principal = { id: 'bob', roles: [], via: 'api-key' }

function upstream (name: string, transport = 'stdio', maxSessionConnections = 64): UpstreamConfig {
  return { name, transport, maxSessionConnections } as unknown as UpstreamConfig
}

/** A session's own connection as the ledger sees it: its upstream and whom it acts for. */
function held (config: UpstreamConfig, principal?: Principal): UpstreamConnection {
  return { name: config.name, config, who: () => principal === undefined ? undefined : { principal } } as unknown as UpstreamConnection
}

interface Setup { perPrincipal?: number, maxRunning?: number, shared?: SharedProcesses }

function ledger (connections: UpstreamConnection[], setup: Setup = {}): { slots: SessionSlots, refused: SessionSlotLimit[] } {
  const refused: SessionSlotLimit[] = []
  const limits = { ...DEFAULT_LIMITS, ...(setup.perPrincipal === undefined ? {} : { sessionConnectionsPerPrincipal: setup.perPrincipal }) }
  // Read live at each claim, as the pool's lifecycle is: a test may change it between claims.
  const shared: SharedProcesses = setup.shared ?? { running: 0, pinned: 0, keepsSlot: true }
  const slots = new SessionSlots(() => connections, () => ({ limits, upstreamDefaults: setup.maxRunning === undefined ? undefined : { maxRunning: setup.maxRunning } as never }), shared, (limit) => refused.push(limit))
  return { slots, refused }
}

function refusal (claim: () => void): { limitName: unknown, limit: unknown, message: string } {
  try {
    claim()
  } catch (err) {
    assert.ok(isSwitchboardError(err, 'SB_ERR_SESSION_LIMIT'), String(err))
    return { limitName: err.details.limitName, limit: err.details.limit, message: err.message }
  }
  assert.fail('the claim was admitted')
}

describe('SessionSlots', () => {
  it('refuses a principal past limits.sessionConnectionsPerPrincipal on one upstream, and only that principal on that upstream', () => {
    const iso = upstream('iso')
    const other = upstream('other')
    const { slots, refused } = ledger([held(iso, alice), held(iso, alice), held(other, bob)], { perPrincipal: 2 })
    const r = refusal(() => { slots.claim(iso, alice) })
    assert.equal(r.limitName, 'sessionConnectionsPerPrincipal')
    assert.equal(r.limit, 2)
    assert.match(r.message, /limits\.sessionConnectionsPerPrincipal: 2/)
    assert.deepEqual(refused, ['sessionConnectionsPerPrincipal'])
    slots.claim(iso, bob)
    slots.claim(other, alice)
    // Same id, another way of signing in: another principal (as isSamePrincipal has it).
    slots.claim(iso, { ...alice, via: 'jwt' })
  })

  it('leaves the anonymous principal of a gateway without auth to maxSessionConnections: there is no one to share among', () => {
    const iso = upstream('iso', 'stdio', 6)
    const many = Array.from({ length: 5 }, () => held(iso, ANONYMOUS))
    const { slots } = ledger(many, { perPrincipal: 1 })
    slots.claim(iso, ANONYMOUS)
    slots.claim(iso, undefined)
    many.push(held(iso, ANONYMOUS))
    assert.equal(refusal(() => { slots.claim(iso, ANONYMOUS) }).limitName, 'maxSessionConnections')
  })

  it('refuses past maxSessionConnections before the share, naming it', () => {
    const iso = upstream('iso', 'stdio', 1)
    const { slots, refused } = ledger([held(iso, bob)])
    const r = refusal(() => { slots.claim(iso, alice) })
    assert.equal(r.limitName, 'maxSessionConnections')
    assert.match(r.message, /maxSessionConnections/)
    assert.deepEqual(refused, ['maxSessionConnections'])
  })

  it('counts sessions\' stdio processes toward maxRunning with the upstreams\' own, and refuses when no slot is free', () => {
    const iso = upstream('iso')
    const sessions = [held(iso, alice)]
    const { slots, refused } = ledger(sessions, { maxRunning: 3, shared: { running: 2, pinned: 0, keepsSlot: true } })
    assert.equal(slots.processes(), 1)
    const r = refusal(() => { slots.claim(iso, bob) })
    assert.equal(r.limitName, 'maxRunning')
    assert.equal(r.limit, 3)
    assert.match(r.message, /upstreamDefaults\.maxRunning: 3/)
    assert.deepEqual(refused, ['maxRunning'])
  })

  it('keeps one slot the sessions cannot take while a shared stdio upstream may need it, and counts the processes the cap may not stop', () => {
    const iso = upstream('iso')
    const sessions: UpstreamConnection[] = []
    const shared = { running: 0, pinned: 0, keepsSlot: true }
    const { slots } = ledger(sessions, { maxRunning: 3, shared })
    slots.claim(iso, alice)
    sessions.push(held(iso, alice))
    slots.claim(iso, bob)
    sessions.push(held(iso, bob))
    assert.equal(refusal(() => { slots.claim(iso, { ...bob, id: 'carol' }) }).limitName, 'maxRunning', 'the third slot is kept')

    sessions.pop()
    shared.running = 1
    shared.pinned = 1
    assert.equal(refusal(() => { slots.claim(iso, bob) }).limitName, 'maxRunning', 'a process held by subscriptions leaves no slot for a lazy start beside the kept one')
    shared.pinned = 0
    slots.claim(iso, bob)

    shared.running = 0
    shared.keepsSlot = false
    sessions.push(held(iso, bob))
    slots.claim(iso, { ...bob, id: 'carol' })
  })

  it('does not count connections of other transports toward maxRunning: they are no processes', () => {
    const web = upstream('web', 'streamable-http')
    const { slots } = ledger([held(web, alice), held(web, bob)], { maxRunning: 1 })
    assert.equal(slots.processes(), 0)
    slots.claim(web, { ...bob, id: 'carol' })
  })

  it('frees a slot the moment the pool lets go of the connection', () => {
    const iso = upstream('iso')
    const sessions = [held(iso, alice)]
    const { slots } = ledger(sessions, { perPrincipal: 1 })
    refusal(() => { slots.claim(iso, alice) })
    sessions.length = 0
    slots.claim(iso, alice)
  })
})

describe('the refusals on the wire', () => {
  it('name the cap in the isError result of tools/call and in the JSON-RPC error of other requests', () => {
    const { slots } = ledger([held(upstream('iso'), alice)], { perPrincipal: 1 })
    let share: unknown
    try { slots.claim(upstream('iso'), alice) } catch (err) { share = err }
    const tool = toToolResult(share, { upstream: 'iso', tool: 'iso__read', timeoutMs: 1000 }) as { isError?: boolean, content: Array<{ text?: string }>, _meta?: Record<string, unknown> }
    assert.equal(tool.isError, true)
    assert.match(tool.content[0]?.text ?? '', /^Switchboard: upstream "iso" gives each session its own connection, and your other sessions already hold as many of them as one principal may \(limits\.sessionConnectionsPerPrincipal: 1\), so tool "iso__read" cannot run in this session now\. End one of your other sessions/)
    assert.deepEqual(tool._meta?.['switchboard/error'], { code: 'SB_ERR_SESSION_LIMIT', upstream: 'iso', limit: 'limits.sessionConnectionsPerPrincipal', max: 1 })

    const busy = ledger([], { maxRunning: 1 }).slots
    let running: unknown
    try { busy.claim(upstream('iso'), alice) } catch (err) { running = err }
    const rpc = toRpcResponse(1, running, { upstream: 'iso', method: 'resources/read' })
    assert.ok('error' in rpc)
    assert.match(rpc.error.message, /upstream "iso" gives each session its own process, and the gateway already runs as many processes as sessions may take \(upstreamDefaults\.maxRunning: 1, one kept for the other upstreams\)\. Try again when another session has ended/)
    assert.deepEqual((rpc.error.data as Record<string, unknown>)['switchboard/error'], { code: 'SB_ERR_SESSION_LIMIT', upstream: 'iso', limit: 'upstreamDefaults.maxRunning', max: 1 })
  })
})
