import { test } from 'node:test'
import assert from 'node:assert/strict'
import { diffConfig, effectiveConfig } from '../../../src/config/config-diff.ts'
import { parseConfig } from '../../../src/config/load-config.ts'

const env = { ADMIN: 'admin-token-0123456789' }
// eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax
const ADMIN_TOKEN = '${ADMIN}'

function config (doc: Record<string, unknown>): ReturnType<typeof parseConfig> {
  return parseConfig(JSON.stringify(doc), env)
}

const a = { name: 'a', transport: 'stdio', command: 'a' }
const b = { name: 'b', transport: 'stdio', command: 'b' }
const c = { name: 'c', transport: 'stdio', command: 'c' }

test('upstreams are sorted into added, removed, changed and unchanged by name and whole config', () => {
  const diff = diffConfig(config({ upstreams: [a, b] }), config({ upstreams: [a, { ...b, timeoutMs: 5 }, c] }))
  assert.deepEqual(diff.upstreams, { added: ['c'], removed: [], changed: ['b'], unchanged: ['a'] })
  assert.deepEqual(diffConfig(config({ upstreams: [a, b] }), config({ upstreams: [b] })).upstreams, { added: [], removed: ['a'], changed: [], unchanged: ['b'] })
})

test('a default spelled out is no change; live sections and restart-only paths are told apart', () => {
  const before = config({ upstreams: [a], catalog: { pageSize: 500 } })
  const same = diffConfig(before, config({ upstreams: [{ ...a, isolation: 'shared' }] }))
  assert.deepEqual([same.applied, same.restartRequired, same.upstreams.unchanged], [[], [], ['a']])
  const diff = diffConfig(before, config({
    upstreams: [a],
    catalog: { pageSize: 10 },
    policies: { default: 'deny' },
    listen: { port: 9999 },
    http: { keepAliveMs: 1000 }
  }))
  assert.deepEqual(diff.applied, ['catalog', 'policies'])
  assert.deepEqual(diff.restartRequired, ['listen', 'http'])
})

test('the effective config keeps what only a restart applies, and takes the rest', () => {
  const before = config({ upstreams: [a], admin: { listen: { port: 9001 }, token: ADMIN_TOKEN } })
  const next = config({ upstreams: [b], listen: { port: 9999 }, admin: { listen: { port: 9002 }, token: ADMIN_TOKEN }, policies: { default: 'deny' } })
  const effective = effectiveConfig(before, next)
  assert.equal(effective.listen.port, 8080)
  assert.equal(effective.admin?.listen.port, 9001)
  assert.deepEqual(effective.upstreams.map(u => u.name), ['b'])
  assert.equal(effective.policies.default, 'deny')
  assert.equal(effectiveConfig(config({}), next).admin, undefined, 'an admin API that was not started stays absent')
})
