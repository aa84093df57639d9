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
import { freePort } from '../../helpers/free-port.ts'
import { UpstreamPool } from '../../../src/upstream/upstream-pool.ts'

const alice: Principal = { id: 'alice', roles: [], via: 'api-key' }
const bob: Principal = { id: 'bob', roles: [], via: 'api-key' }

/** A pool over two HTTP upstreams (one shared, one session-isolated) whose provider records whom it was asked for. */
async function poolFor (t: TestContext): Promise<{ pool: UpstreamPool, askedFor: Array<{ upstream: string, principal: string | undefined }> }> {
  const url = `http://127.0.0.1:${await freePort()}/mcp`
  const config = parseConfig(JSON.stringify({
    upstreams: [
      { name: 'one', transport: 'streamable-http', url, protocol: '2025-11-25' },
      { name: 'own', transport: 'streamable-http', url, protocol: '2025-11-25', isolation: 'session', maxSessionConnections: 2 }
    ]
  }), {})
  const askedFor: Array<{ upstream: string, principal: string | undefined }> = []
  const credentials = new CredentialProviders({
    static: () => {
      const inner = new StaticCredentialProvider()
      return {
        type: 'static',
        headersFor: async (upstream: UpstreamConfig, who: CredentialRequest | undefined) => {
          askedFor.push({ upstream: upstream.name, principal: who?.principal.id })
          return await inner.headersFor(upstream)
        },
        childEnvFor: async (upstream: UpstreamConfig) => await inner.childEnvFor(upstream)
      }
    }
  })
  const quiet = (): void => {}
  const pool = new UpstreamPool(config, pino({ level: 'silent' }), { lists: quiet, state: quiet, reconnect: quiet }, { name: 'test', version: '0' }, {}, credentials)
  t.after(() => pool.close())
  return { pool, askedFor }
}

const session = (id: string, principal: Principal): { id: string, clientCapabilities: Record<string, unknown>, principal: Principal } => ({ id, clientCapabilities: {}, principal })

test('a shared upstream serves every session on its own connection; a session-isolated one opens one per session, once', async (t) => {
  const { pool } = await poolFor(t)
  assert.equal(pool.size, 2, 'each upstream\'s own connection')
  assert.equal(pool.connectionFor('one', session('s1', alice)), pool.get('one'))
  const s1 = pool.connectionFor('own', session('s1', alice))
  assert.ok(s1 !== undefined && s1 !== pool.get('own'))
  assert.equal(pool.connectionFor('own', session('s1', alice)), s1, 'the same session finds the same connection')
  const s2 = pool.connectionFor('own', session('s2', bob))
  assert.ok(s2 !== undefined && s2 !== s1)
  assert.equal(pool.size, 4)
  assert.deepEqual([...pool.sessionConnections('s1')], [s1])
  assert.deepEqual([...pool.sharedConnections()].map(c => c.name), ['one', 'own'])
  assert.deepEqual(pool.status().map(s => [s.name, s.sessionConnections]), [['one', 0], ['own', 2]])
  assert.throws(() => pool.connectionFor('own', session('s3', bob)), { code: 'SB_ERR_SESSION_LIMIT' })
  await pool.releaseSession('s1')
  assert.equal(s1.state, 'closed')
  assert.deepEqual([...pool.sessionConnections('s1')], [])
  assert.equal(pool.size, 3)
  assert.ok(pool.connectionFor('own', session('s3', bob)) !== undefined, 'the released place is free again')
})

test('a session\'s own connection asks the provider for that session\'s principal; the upstream\'s own connection for none', async (t) => {
  const { pool, askedFor } = await poolFor(t)
  pool.start()
  await pool.settled()
  pool.connectionFor('own', session('s1', alice))
  while (!askedFor.some(a => a.principal === 'alice')) await new Promise(resolve => setImmediate(resolve))
  assert.ok(askedFor.some(a => a.upstream === 'own' && a.principal === 'alice'))
  assert.ok(askedFor.some(a => a.upstream === 'one' && a.principal === undefined))
  assert.ok(askedFor.every(a => a.principal !== 'bob'))
})
