import { test } from 'node:test'
import assert from 'node:assert/strict'
import { configIssues, envRef as ref } from '../../helpers/config-issues.ts'
import { parseConfig } from '../../../src/config/load-config.ts'
import { DEFAULT_ADMIN_HOST, DEFAULT_ADMIN_PORT, DEFAULT_CONSOLE_SESSION_TTL_MS } from '../../../src/config/admin-schema.ts'

const TOKEN = 'a-long-admin-token-from-the-env'
const ENV = { SWITCHBOARD_ADMIN_TOKEN: TOKEN }

function issues (yaml: string, env: NodeJS.ProcessEnv = ENV): string[] {
  return configIssues(yaml, env)
}

test('no admin block: no admin API', () => {
  assert.equal(parseConfig('{}', {}).admin, undefined)
})

test('an admin block with only a token from the environment listens on loopback 8081', () => {
  const config = parseConfig(`admin: { token: "${ref('SWITCHBOARD_ADMIN_TOKEN')}" }`, ENV)
  assert.deepEqual(config.admin, { listen: { host: DEFAULT_ADMIN_HOST, port: DEFAULT_ADMIN_PORT }, token: TOKEN, showQueryParams: [], allowedHosts: [], allowedOrigins: [], console: { enabled: true, sessionTtlMs: DEFAULT_CONSOLE_SESSION_TTL_MS, maxSessions: 64, actAsUnknown: false } })
  assert.equal(DEFAULT_ADMIN_HOST, '127.0.0.1')
  assert.equal(DEFAULT_ADMIN_PORT, 8081)
})

test('a token built from several variables, or with a fixed part, counts as from the environment', () => {
  const config = parseConfig(`admin: { token: "sb-${ref('A')}-${ref('B')}", listen: { host: 0.0.0.0, port: 9000 } }\nauth: { apiKeys: [{ id: x, key: "${ref('K')}" }] }`,
    { A: '0123456789', B: 'abcdefghij', K: 'k'.repeat(20) })
  assert.equal(config.admin?.token, 'sb-0123456789-abcdefghij')
  assert.deepEqual(config.admin?.listen, { host: '0.0.0.0', port: 9000 })
})

test('a token shorter than 16 characters is refused with a hint to take it from the environment', () => {
  const found = issues(`admin: { token: "${ref('SHORT')}" }`, { SHORT: 'abc' })
  assert.equal(found.length, 1)
  assert.match(found[0] ?? '', /^admin\.token: must be at least 16 characters/)
  assert.match(found[0] ?? '', /SWITCHBOARD_ADMIN_TOKEN/)
})

test('a token written into the file is refused, even a long one, and the issue never echoes it', () => {
  const literal = 'literal-token-typed-into-the-file'
  const found = issues(`admin: { token: "${literal}" }`)
  assert.deepEqual(found, [`admin.token: must come from the environment, e.g. "${ref('SWITCHBOARD_ADMIN_TOKEN')}": a secret never sits in the config file`])
  assert.ok(!found.join('\n').includes(literal))
})

test('a literal token is reported together with every other mistake', () => {
  const found = issues('admin: { token: "literal-token-typed-into-the-file", listen: { port: 70000 } }\nlogLevel: loud')
  assert.deepEqual(found.map(f => f.split(':')[0]).sort(), ['admin.listen.port', 'admin.token', 'logLevel'])
})

test('an unset token variable names the path; unknown admin keys are refused', () => {
  assert.deepEqual(issues(`admin: { token: "${ref('NOPE')}" }`, {}), ['admin.token: environment variable NOPE is not set'])
  assert.match(issues(`admin: { token: "${ref('SWITCHBOARD_ADMIN_TOKEN')}", port: 1 }`).join('\n'), /^admin: Unrecognized key/m)
})

test('the admin port may not be the MCP port on the same, a wildcard or a loopback address', () => {
  const clash = 'admin.listen.port: must differ from listen.port: the admin API never shares the MCP listener'
  const tok = `token: "${ref('SWITCHBOARD_ADMIN_TOKEN')}"`
  assert.deepEqual(issues(`listen: { port: 9000 }\nadmin: { ${tok}, listen: { port: 9000 } }`), [clash])
  assert.deepEqual(issues(`admin: { ${tok}, listen: { port: 8080 } }`), [clash])
  assert.deepEqual(issues(`listen: { host: localhost, port: 9000 }\nadmin: { ${tok}, listen: { host: 127.0.0.1, port: 9000 } }`), [clash])
  assert.deepEqual(issues(`listen: { host: 0.0.0.0, port: 9000, allowUnauthenticated: true }\nadmin: { ${tok}, listen: { host: 127.0.0.1, port: 9000 } }`), [clash])
  assert.deepEqual(issues(`listen: { port: 9000 }\nadmin: { ${tok}, listen: { host: '::', port: 9000 } }`), [clash])
})

test('the same port on two different addresses, or port 0 on both, is allowed', () => {
  const tok = `token: "${ref('SWITCHBOARD_ADMIN_TOKEN')}"`
  assert.deepEqual(issues(`listen: { host: 10.0.0.5, port: 9000, allowUnauthenticated: true }\nadmin: { ${tok}, listen: { host: 127.0.0.1, port: 9000 } }`), [])
  assert.deepEqual(issues(`listen: { port: 0 }\nadmin: { ${tok}, listen: { port: 0 } }`), [])
})
