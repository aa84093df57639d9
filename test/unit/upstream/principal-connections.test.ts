import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import type { Principal } from '../../../src/auth/principal.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import type { UpstreamConfig } from '../../../src/config/schema.ts'
import { CredentialProviders } from '../../../src/credentials/credential-providers.ts'
import type { CredentialRequest } from '../../../src/credentials/credential-provider.ts'
import { StaticCredentialProvider } from '../../../src/credentials/static-credential-provider.ts'
import { CallSignal } from '../../../src/protocol/cancel-signal.ts'
import { keyFor } from '../../../src/upstream/connection-key.ts'
import { freePort } from '../../helpers/free-port.ts'
import { UpstreamPool } from '../../../src/upstream/upstream-pool.ts'
import { startControllableHttpServer } from '../../fixtures/controllable-server.ts'
import { waitFor } from '../../helpers/start-gateway.ts'

const alice: Principal = { id: 'alice', roles: [], via: 'api-key' }
const bob: Principal = { id: 'bob', roles: [], via: 'api-key' }
const carol: Principal = { id: 'carol', roles: [], via: 'jwt' }

interface Made { pool: UpstreamPool, askedFor: Array<string | undefined>, counts: Array<[string, number]> }

/** A pool over one principal-isolated HTTP upstream whose provider records whom it was asked for. */
async function poolFor (t: TestContext, upstream: Record<string, unknown>, url?: string): Promise<Made> {
  const config = parseConfig(JSON.stringify({
    upstreams: [{ name: 'mine', transport: 'streamable-http', url: url ?? `http://127.0.0.1:${await freePort()}/mcp`, protocol: '2025-11-25', isolation: 'principal', ...upstream }]
  }), {})
  const askedFor: Array<string | undefined> = []
  const counts: Array<[string, number]> = []
  const credentials = new CredentialProviders({
    static: () => {
      const inner = new StaticCredentialProvider()
      return {
        type: 'static',
        headersFor: async (u: UpstreamConfig, who: CredentialRequest | undefined) => {
          askedFor.push(who === undefined ? undefined : `${who.principal.via}:${who.principal.id}`)
          return await inner.headersFor(u)
        },
        childEnvFor: async (u: UpstreamConfig) => await inner.childEnvFor(u)
      }
    }
  })
  const quiet = (): void => {}
  const pool = new UpstreamPool(config, pino({ level: 'silent' }), { lists: quiet, state: quiet, reconnect: quiet }, { name: 'test', version: '0' }, {}, credentials, {
    onPrincipalConnections: (name, count) => { counts.push([name, count]) }
  })
  t.after(() => pool.close())
  return { pool, askedFor, counts }
}

const session = (id: string, principal: Principal): { id: string, clientCapabilities: Record<string, unknown>, principal: Principal } => ({ id, clientCapabilities: { roots: { listChanged: true } }, principal })

const principalCount = (pool: UpstreamPool): number | undefined => pool.status()[0]?.principalConnections

test('a principal connection is keyed by how the principal was established and its id, never by session', () => {
  const config = { name: 'mine', isolation: 'principal' as const }
  assert.equal(keyFor(config, session('s1', alice)), keyFor(config, session('s2', alice)))
  assert.equal(keyFor(config, session('s1', alice)), 'mine\u0000principal\u0000api-key:alice')
  assert.notEqual(keyFor(config, session('s1', alice)), keyFor(config, session('s1', { ...alice, via: 'jwt' })))
  assert.equal(keyFor(config, { id: 's1' }), 'mine\u0000principal\u0000none:anonymous', 'no principal: the anonymous one')
  assert.equal(keyFor(config), 'mine', 'no ref: the upstream\'s own connection')
})

test('all sessions of one principal share one connection, which outlives them; another principal gets another', async (t) => {
  const { pool, counts } = await poolFor(t, {})
  const a1 = pool.connectionFor('mine', session('s1', alice))
  assert.ok(a1 !== undefined && a1 !== pool.get('mine'))
  assert.equal(a1.scope, 'principal')
  assert.equal(pool.connectionFor('mine', session('s2', alice)), a1)
  const b = pool.connectionFor('mine', session('s3', bob))
  assert.ok(b !== undefined && b !== a1)
  assert.equal(a1.who()?.principal, alice)
  assert.equal(b.who()?.principal, bob)
  assert.deepEqual(pool.status().map(s => [s.sessionConnections, s.principalConnections]), [[0, 2]])
  assert.deepEqual(counts, [['mine', 1], ['mine', 2]])
  assert.deepEqual([...pool.sessionConnections('s1')], [], 'not a session\'s own connection')
  await pool.releaseSession('s1')
  await pool.releaseSession('s2')
  assert.notEqual(a1.state, 'closed', 'the principal\'s connection stays when their sessions end')
  assert.equal(pool.connectionFor('mine', session('s4', alice)), a1)
})

test('any session of a principal finds the principal\'s connection connected; another principal\'s does not', async (t) => {
  const server = await startControllableHttpServer()
  t.after(() => server.close())
  const { pool } = await poolFor(t, {}, server.url)
  const connection = pool.connectionFor('mine', session('s1', alice))
  assert.ok(connection !== undefined)
  await waitFor(() => connection.state === 'ready', 'the principal connection to be ready')
  const result = await connection.request('tools/call', { name: 'whoami', arguments: {} }, { timeoutMs: 5000 }, { sessionId: 's1' })
  assert.ok(result.structuredContent !== undefined)
  assert.ok(pool.isConnected('mine', session('s9', alice)), 'any session of the principal finds it connected')
  assert.ok(!pool.isConnected('mine', session('s1', bob)))
})

test('two principals get two connections and the provider is asked for each one\'s own principal', async (t) => {
  const { pool, askedFor } = await poolFor(t, {})
  pool.start()
  await pool.settled()
  pool.connectionFor('mine', session('s1', alice))
  pool.connectionFor('mine', session('s2', carol))
  await waitFor(() => askedFor.includes('api-key:alice') && askedFor.includes('jwt:carol'), 'both principals\' connections to ask for credentials')
  assert.ok(askedFor.includes(undefined), 'the upstream\'s own connection asks for nobody')
  assert.ok(askedFor.every(a => a === undefined || a === 'api-key:alice' || a === 'jwt:carol'))
})

test('a principal connection with no call for idleCloseMs is closed and the next call opens another', async (t) => {
  const { pool } = await poolFor(t, { idleCloseMs: 50 })
  const first = pool.connectionFor('mine', session('s1', alice))
  assert.equal(principalCount(pool), 1)
  await waitFor(() => principalCount(pool) === 0, 'the idle principal connection to close')
  assert.equal(first?.state, 'closed')
  const second = pool.connectionFor('mine', session('s1', alice))
  assert.ok(second !== undefined && second !== first)
})

test('at maxPrincipalConnections the connection idle longest is closed to make room', async (t) => {
  const { pool } = await poolFor(t, { maxPrincipalConnections: 2 })
  const a = pool.connectionFor('mine', session('s1', alice))
  const b = pool.connectionFor('mine', session('s2', bob))
  const c = pool.connectionFor('mine', session('s3', carol))
  assert.ok(a !== undefined && b !== undefined && c !== undefined)
  assert.equal(a.state, 'closed', 'alice\'s, opened first and unused since, made room')
  assert.notEqual(b.state, 'closed')
  assert.equal(principalCount(pool), 2)
  assert.notEqual(pool.connectionFor('mine', session('s4', alice)), a, 'alice gets a new one (and bob\'s makes room)')
})

test('when every principal connection has a call in flight, a new principal is refused with SB_ERR_SESSION_LIMIT naming maxPrincipalConnections', async (t) => {
  const server = await startControllableHttpServer()
  t.after(() => server.close())
  const { pool } = await poolFor(t, { maxPrincipalConnections: 1 }, server.url)
  const a = pool.connectionFor('mine', session('s1', alice))
  assert.ok(a !== undefined)
  const signal = new CallSignal()
  t.after(() => { signal.abort(new Error('test over')) })
  const stalled = a.request('tools/call', { name: 'stall', arguments: {} }, { timeoutMs: 30_000, signal }, { sessionId: 's1' })
  stalled.catch(() => {})
  await waitFor(() => a.activeCalls.size === 1, 'the stalled call to be in flight')
  assert.throws(() => pool.connectionFor('mine', session('s2', bob)), (err: Error & { code?: string, details?: Record<string, unknown> }) => {
    assert.equal(err.code, 'SB_ERR_SESSION_LIMIT')
    assert.match(err.message, /maxPrincipalConnections/)
    assert.equal(err.details?.limitName, 'maxPrincipalConnections')
    return true
  })
  assert.notEqual(a.state, 'closed', 'a busy connection is never closed to make room')
})

test('per-user OAuth without a listing credential: the upstream\'s own connection awaits its users and the first principal connection to list fills the catalog', async (t) => {
  const server = await startControllableHttpServer()
  t.after(() => server.close())
  const config = parseConfig(JSON.stringify({
    upstreams: [{ name: 'gh', transport: 'streamable-http', url: server.url, protocol: '2025-11-25', auth: { type: 'oauth', clientId: 'gateway' } }]
  }), {})
  const listed: Array<[string, number]> = []
  const kept: Array<[string, number]> = []
  const states: string[] = []
  const quiet = (): void => {}
  const pool = new UpstreamPool(config, pino({ level: 'silent' }), {
    lists: (name, lists) => { listed.push([name, lists?.tools.length ?? -1]) },
    state: (_name, state) => { states.push(state) },
    reconnect: quiet
  // The pool is under test, not OAuth: the upstream checks no token, so the oauth type gets static headers.
  }, { name: 'test', version: '0' }, {}, new CredentialProviders({ oauth: () => new StaticCredentialProvider() }), { onPrincipalLists: (name, lists) => { kept.push([name, lists.tools.length]) } })
  t.after(() => pool.close())
  pool.start()
  await pool.settled()
  assert.equal(pool.status()[0]?.state, 'awaiting_user')
  assert.deepEqual(states, ['awaiting_user'])
  assert.equal(server.state.connections.size, 0, 'nothing was sent without a user')
  await assert.rejects(pool.get('gh')?.request('tools/list', {}, { timeoutMs: 1000 }) ?? Promise.resolve(), { code: 'SB_ERR_UPSTREAM_UNAVAILABLE' })

  const a = pool.connectionFor('gh', session('s1', alice))
  await waitFor(() => listed.length === 1, 'alice\'s connection to report its lists')
  assert.equal(listed[0]?.[0], 'gh')
  assert.ok((listed[0]?.[1] ?? 0) > 0, 'the upstream\'s tools')
  assert.deepEqual(kept, listed, 'the hook hears the same lists')
  const b = pool.connectionFor('gh', session('s2', bob))
  await waitFor(() => b?.state === 'ready', 'bob\'s connection to be ready')
  assert.equal(listed.length, 1, 'only the first principal\'s connection speaks for the catalog')
  assert.equal(a?.scope, 'principal')
  assert.deepEqual(states, ['awaiting_user'], 'principal connections do not report the upstream\'s state')
})
