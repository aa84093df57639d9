import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { REDACTED, redactConfig, redactUrl } from '../../../src/config/redact.ts'

/** A `${NAME}` reference as it appears in a config file. */
function ref (name: string): string {
  return '$' + `{${name}}`
}

// One distinctive value per place a secret can sit; none may survive redaction.
const SECRETS = {
  API_KEY: 'secret-api-key-0001',
  ADMIN_TOKEN: 'secret-admin-token-0002',
  REDIS_PASSWORD: 'secretredispw0003',
  RL_PASSWORD: 'secretrlpw0004',
  PIN_PASSWORD: 'secretpinpw0005',
  UP_ENV: 'secret-env-value-0006',
  UP_HEADER: 'Bearer secret-header-0007',
  UP_URL_PASSWORD: 'secreturlpw0008',
  UP_QUERY_TOKEN: 'secretquerytoken0009',
  ARG_FLAG: 'secret-arg-flag-0010',
  ARG_ASSIGN: 'secret-arg-assign-0011',
  ARG_HEADER: 'secret-arg-header-0012',
  ARG_URL: 'secretargurlpw0013',
  JWKS_PASSWORD: 'secretjwkspw0014',
  WS_PASSWORD: 'secretwspw0015',
  ARG_ENV: 'secret-arg-env-0016'
}

const YAML = `
listen: { port: 8080 }
admin: { token: "${ref('ADMIN_TOKEN')}", listen: { port: 8181 } }
auth:
  apiKeys: [{ id: alice, key: "${ref('API_KEY')}", roles: [ops] }]
  jwt: { issuer: "https://idp.example", audience: "https://gw.example/mcp", jwksUri: "https://jwks:${ref('JWKS_PASSWORD')}@idp.example/keys" }
redis: { url: "redis://default:${ref('REDIS_PASSWORD')}@redis:6379/0" }
sessions: { store: redis }
rateLimits: { store: redis, redisUrl: "redis://:${ref('RL_PASSWORD')}@rl:6379" }
pinning: { store: redis, redisUrl: "rediss://pins:${ref('PIN_PASSWORD')}@pins:6380" }
upstreams:
  - name: local
    transport: stdio
    command: npx
    args: [mcp-remote, "https://u:${ref('ARG_URL')}@remote.example/mcp", --header, "Authorization:${ref('ARG_HEADER')}", --api-key, "${ref('ARG_FLAG')}", "--client-secret=${ref('ARG_ASSIGN')}", "GITHUB_TOKEN=${ref('ARG_ENV')}", --verbose]
    env: { GITHUB_TOKEN: "${ref('UP_ENV')}", PLAIN: "${ref('UP_ENV')}" }
    tools: { rename: { get_token: fetch_token } }
  - name: remote
    transport: streamable-http
    url: "https://svc:${ref('UP_URL_PASSWORD')}@api.example/mcp?access_token=${ref('UP_QUERY_TOKEN')}&region=eu"
    headers: { Authorization: "${ref('UP_HEADER')}", X-Tenant: "${ref('UP_ENV')}" }
  - name: socket
    transport: websocket
    url: "wss://ws:${ref('WS_PASSWORD')}@ws.example/mcp"
`

interface RedactedUpstream { command?: string, args: string[], env: unknown, headers: unknown, url?: string, tools: { rename: unknown } }

/** The parts of the redacted document the tests look at. */
interface Redacted {
  listen: unknown
  catalog: unknown
  audit: unknown
  admin: { token: string, listen: unknown }
  auth: { apiKeys: unknown, jwt: { jwksUri: string, audience: string } }
  redis: { url: string }
  rateLimits: { redisUrl: string }
  pinning: { redisUrl: string }
  upstreams: [RedactedUpstream, RedactedUpstream, RedactedUpstream]
}

function redacted (): Redacted {
  return redactConfig(parseConfig(YAML, SECRETS)) as Redacted
}

test('no secret survives: none of the configured secret values appears in the redacted config', () => {
  const text = JSON.stringify(redactConfig(parseConfig(YAML, SECRETS)))
  for (const [name, value] of Object.entries(SECRETS)) {
    assert.ok(!text.includes(value), `${name} survived redaction`)
    assert.ok(!text.includes(value.replace(/^Bearer /, '')), `${name} survived redaction`)
  }
})

test('API keys, the admin token, upstream env and header values become [redacted]; their names stay', () => {
  const out = redacted()
  assert.deepEqual(out.auth.apiKeys, [{ id: 'alice', key: REDACTED, roles: ['ops'] }])
  assert.equal(out.admin.token, REDACTED)
  assert.deepEqual(out.admin.listen, { host: '127.0.0.1', port: 8181 })
  assert.deepEqual(out.upstreams[0].env, { GITHUB_TOKEN: REDACTED, PLAIN: REDACTED })
  assert.deepEqual(out.upstreams[1].headers, { Authorization: REDACTED, 'X-Tenant': REDACTED })
})

test('URL passwords are replaced in place; user, host, port and path stay', () => {
  const out = redacted()
  assert.equal(out.redis.url, `redis://default:${REDACTED}@redis:6379/0`)
  assert.equal(out.rateLimits.redisUrl, `redis://:${REDACTED}@rl:6379`)
  assert.equal(out.pinning.redisUrl, `rediss://pins:${REDACTED}@pins:6380`)
  assert.equal(out.auth.jwt.jwksUri, `https://jwks:${REDACTED}@idp.example/keys`)
  assert.equal(out.upstreams[2].url, `wss://ws:${REDACTED}@ws.example/mcp`)
})

test('secret-named query parameters are replaced; the others stay', () => {
  const url = new URL(redacted().upstreams[1].url ?? '')
  assert.equal(url.password, encodeURIComponent(REDACTED))
  assert.equal(url.username, 'svc')
  assert.equal(url.searchParams.get('access_token'), REDACTED)
  assert.equal(url.searchParams.get('region'), 'eu')
})

test('args: the value after a secret flag, secret assignments, secret headers and URL passwords are hidden', () => {
  assert.deepEqual(redacted().upstreams[0].args, [
    'mcp-remote',
    `https://u:${REDACTED}@remote.example/mcp`,
    '--header',
    `Authorization: ${REDACTED}`,
    '--api-key',
    REDACTED,
    `--client-secret=${REDACTED}`,
    `GITHUB_TOKEN=${REDACTED}`,
    '--verbose'
  ])
})

test('everything else is kept as it is, tool renames mentioning "token" included', () => {
  const config = parseConfig(YAML, SECRETS)
  const out = redacted()
  assert.deepEqual(out.upstreams[0].tools.rename, { get_token: 'fetch_token' })
  assert.equal(out.upstreams[0].command, 'npx')
  assert.deepEqual(out.catalog, config.catalog)
  assert.deepEqual(out.audit, config.audit)
  assert.deepEqual(out.listen, config.listen)
  assert.equal(out.auth.jwt.audience, 'https://gw.example/mcp')
})

test('the result is a plain, unfrozen copy: the running config is untouched', () => {
  const config = parseConfig(YAML, SECRETS)
  const out = redactConfig(config)
  assert.ok(!Object.isFrozen(out))
  assert.equal(config.admin?.token, SECRETS.ADMIN_TOKEN)
  assert.deepEqual(JSON.parse(JSON.stringify(out)), out)
})

test('redactUrl leaves strings that are not URLs, and URLs without secrets, byte for byte', () => {
  for (const s of ['plain', 'a:b', 'C:\\Users\\x', 'https://HOST.example', 'redis://user@h:1', 'https://x.example/?q=1&b=%20', 'node server.js']) {
    assert.equal(redactUrl(s), s)
  }
  assert.equal(redactUrl('https://x.example/cb?api-key=zzz&Password=p'), `https://x.example/cb?api-key=${REDACTED}&Password=${REDACTED}`)
})
