import { it } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { parseConfig } from '../../../src/config/load-config.ts'
import { isKnownPrincipal, principalFor, principalsOf } from '../../../src/ops/console-principals.ts'
import { sessionIdOf, sessionList, sessionRef } from '../../../src/ops/session-list.ts'
import { Session } from '../../../src/session/session.ts'

const log = pino({ level: 'silent' })
const view = { unrestricted: true, allows: () => true }
const digests = { tools: '', prompts: '', resources: '' }

function session (principal: string, endpoint: string | undefined, lastActivity: number, clientInfo?: Record<string, unknown>): Session {
  const s = new Session({ transport: 'streamable-http', protocolVersion: '2025-11-25', clientInfo, clientCapabilities: {}, principal: { id: principal, roles: [], via: 'api-key' }, ...(endpoint === undefined ? {} : { endpoint }), view, digests, log })
  s.lastActivity = lastActivity
  return s
}

it('lists sessions newest activity first under a ref of 16 hex digits, counts them all, and says when the list was cut', () => {
  const sessions = [session('alice', undefined, 1), session('bob', 'ro', 3, { name: 'x'.repeat(300), version: '1' }), session('alice', 'ro', 2, { name: 'claude', version: '2.0' })]
  const list = sessionList(sessions, 2)
  assert.equal(list.total, 3)
  assert.deepEqual(list.byPrincipal, { alice: 2, bob: 1 })
  assert.deepEqual(list.byEndpoint, { '': 1, ro: 2 })
  assert.deepEqual(list.byTransport, { 'streamable-http': 3 })
  assert.equal(list.truncated, true)
  assert.deepEqual(list.sessions.map(s => [s.principal, s.endpoint, s.lastActivityAt]), [['bob', 'ro', 3], ['alice', 'ro', 2]])
  assert.equal(list.sessions[0]?.client?.length, 200)
  assert.equal(list.sessions[1]?.client, 'claude 2.0')
  for (const item of list.sessions) assert.match(item.ref, /^[0-9a-f]{16}$/)
  assert.ok(!JSON.stringify(list).includes(sessions[1]?.id ?? '-'), 'no session id shown')
  assert.equal(sessionList(sessions, 5).truncated, false)
})

it('finds a session by its ref, and nothing by a malformed or unknown one', () => {
  const sessions = [session('alice', undefined, 1), session('bob', undefined, 2)]
  const target = sessions[1] as Session
  assert.equal(sessionIdOf(sessions, sessionRef(target.id)), target.id)
  assert.equal(sessionIdOf(sessions, '0000000000000000'), undefined)
  assert.equal(sessionIdOf(sessions, target.id), undefined)
})

it('the console acts as an API key\'s principal with its roles, as anonymous without auth, and as any JWT subject with the roles given', () => {
  const keys = parseConfig('auth: { apiKeys: [{ id: alice, key: "$' + '{K}", roles: [dev] }] }\nupstreams: []', { K: 'secret-key-0123456789abcdef' }).auth
  assert.deepEqual(principalsOf(keys), [{ id: 'alice', roles: ['dev'], via: 'api-key' }])
  assert.deepEqual(principalFor(keys, 'alice', ['admin']), { id: 'alice', roles: ['dev'], via: 'api-key' }, 'configured roles, not the ones asked for')
  assert.equal(principalFor(keys, 'mallory'), undefined)
  assert.deepEqual(principalsOf(undefined), [{ id: 'anonymous', roles: [], via: 'none' }])
  assert.equal(principalFor(undefined, 'anonymous')?.via, 'none')
  assert.equal(principalFor(undefined, 'alice'), undefined)
  const jwt = parseConfig('auth: { jwt: { issuer: "https://id.example", audience: "https://gw.example/mcp", jwksUri: "https://id.example/jwks" } }\nupstreams: []', {}).auth
  assert.deepEqual(principalFor(jwt, 'user-7', ['ops']), { id: 'user-7', roles: ['ops'], via: 'jwt' })
  assert.equal(principalFor(jwt, ''), undefined)
})

it('a principal is known when configured, or as a JWT subject with an open session here or a stored upstream grant', async () => {
  const asked: string[] = []
  const grants = async (key: string): Promise<unknown[]> => { asked.push(key); return key === 'jwt:grant-holder' ? [{}] : [] }
  const sessions = (): Session[] => [session('alice', undefined, 1)]
  const jwtSession = new Session({ transport: 'streamable-http', protocolVersion: '2025-11-25', clientInfo: undefined, clientCapabilities: {}, principal: { id: 'carol', roles: [], via: 'jwt' }, view, digests, log })
  const evidence = { sessions: () => [...sessions(), jwtSession], grants }
  assert.equal(await isKnownPrincipal({ id: 'alice', roles: [], via: 'api-key' }, evidence), true)
  assert.equal(await isKnownPrincipal({ id: 'anonymous', roles: [], via: 'none' }, evidence), true)
  assert.equal(await isKnownPrincipal({ id: 'carol', roles: ['any'], via: 'jwt' }, evidence), true, 'an open session')
  assert.equal(await isKnownPrincipal({ id: 'alice', roles: [], via: 'jwt' }, evidence), false, 'an API key\'s session is not a JWT subject\'s')
  assert.equal(await isKnownPrincipal({ id: 'grant-holder', roles: [], via: 'jwt' }, evidence), true, 'a stored grant')
  assert.equal(await isKnownPrincipal({ id: 'dave', roles: [], via: 'jwt' }, evidence), false)
  assert.equal(await isKnownPrincipal({ id: 'dave', roles: [], via: 'jwt' }, { sessions }), false, 'no vault: no grants')
  assert.ok(asked.includes('jwt:grant-holder'))
})
