import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseConfig } from '../../../src/config/load-config.ts'
import { isCredentialFlag } from '../../../src/config/credential-names.ts'
import { REDACTED, redactConfig, redactUrl, redactUrls } from '../../../src/config/redact.ts'

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

test('every query value is replaced, whatever its name; user, host and path stay', () => {
  const url = new URL(redacted().upstreams[1].url ?? '')
  assert.equal(url.password, encodeURIComponent(REDACTED))
  assert.equal(url.username, 'svc')
  assert.equal(url.searchParams.get('access_token'), REDACTED)
  assert.equal(url.searchParams.get('region'), REDACTED)
})

test('admin.showQueryParams lists the query parameters (any case) whose values are shown', () => {
  const yaml = YAML.replace('listen: { port: 8181 } }', 'listen: { port: 8181 }, showQueryParams: [Region] }')
  const url = new URL((redactConfig(parseConfig(yaml, SECRETS)) as Redacted).upstreams[1].url ?? '')
  assert.equal(url.searchParams.get('region'), 'eu')
  assert.equal(url.searchParams.get('access_token'), REDACTED)
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
  for (const s of ['plain', 'a:b', 'C:\\Users\\x', 'https://HOST.example', 'redis://user@h:1', 'https://x.example/?flag&empty=', 'node server.js']) {
    assert.equal(redactUrl(s), s)
  }
  assert.equal(redactUrl('https://x.example/cb?api-key=zzz&Password=p'), `https://x.example/cb?api-key=${REDACTED}&Password=${REDACTED}`)
})

test('redactUrl hides every query value (sig=, SAS tokens, codes) and the fragment unless shown', () => {
  const sas = 'https://acct.blob.example/c/mcp?sv=2024-01-01&se=2026-12-31&sp=r&sig=c2VjcmV0LXNpZw%3D%3D&sig=again'
  assert.equal(redactUrl(sas), `https://acct.blob.example/c/mcp?sv=${REDACTED}&se=${REDACTED}&sp=${REDACTED}&sig=${REDACTED}&sig=${REDACTED}`)
  assert.equal(new URL(redactUrl(sas, new Set(['sv']))).searchParams.get('sv'), '2024-01-01')
  assert.ok(!redactUrl('https://app.example/cb#access_token=abc').includes('abc'))
})

test('redactUrls finds URLs inside a longer string', () => {
  const out = redactUrls('endpoint https://x.example/mcp?sig=abcdef and more')
  assert.ok(!out.includes('abcdef'))
  assert.match(out, /^endpoint https:\/\/x\.example\/mcp\?sig=.*redacted.* and more$/)
})

test('credential flags: broad substrings, whole words for pat and sig, a few short flags', () => {
  for (const flag of ['-t', '-k', '-a', '-p', '-u', '--auth', '--pat', '--gh-pat', '--pat-file', '--access-key', '--private-key', '--privateKey',
    '--sig', '--signature', '--token', '--apiKey', '--client-secret', '--password', '--passphrase', '--pwd', '--credentials', '--cookie',
    '--session', '--session-id', '--bearer', 'GITHUB_TOKEN', 'AWS_SECRET_ACCESS_KEY']) {
    assert.ok(isCredentialFlag(flag), flag)
  }
  for (const flag of ['--path', '--pattern', '--patch', '--signal', '--design', '--verbose', '--port', '--host', '--url', '-y', '-v', '--header', 'PATH']) {
    assert.ok(!isCredentialFlag(flag), flag)
  }
})

test('args: values after -t, --auth, --pat, --access-key, --private-key and their --flag=value forms are hidden; --path stays', () => {
  const yaml = `
upstreams:
  - name: cli
    transport: stdio
    command: tool
    args: [-t, tok-1, --auth, auth-2, --pat, pat-3, --access-key, ak-4, --private-key, pk-5, "--gh-pat=pat-6", "-t=tok-7",
      --path, /srv/data, --url, "https://h.example/mcp?sig=sig-8&region=eu", "--endpoint=https://h.example/x?code=code-9", --pattern, "*.ts"]
`
  const args = (redactConfig(parseConfig(yaml, {})) as { upstreams: RedactedUpstream[] }).upstreams[0]?.args ?? []
  const text = JSON.stringify(args)
  for (const secret of ['tok-1', 'auth-2', 'pat-3', 'ak-4', 'pk-5', 'pat-6', 'tok-7', 'sig-8', 'code-9']) assert.ok(!text.includes(secret), secret)
  assert.deepEqual(args.slice(0, 12), ['-t', REDACTED, '--auth', REDACTED, '--pat', REDACTED, '--access-key', REDACTED, '--private-key', REDACTED, `--gh-pat=${REDACTED}`, `-t=${REDACTED}`])
  assert.deepEqual(args.slice(12, 14), ['--path', '/srv/data'])
  assert.deepEqual(args.slice(-2), ['--pattern', '*.ts'])
  assert.match(args[16] ?? '', /^--endpoint=https:\/\/h\.example\/x\?code=/)
})

test('the guardrail hook\'s header values are hidden whatever their names, and its URL as any URL', () => {
  const yaml = `guardrails: { webhook: { url: "https://hook.example/check?key=${ref('HOOK_QUERY')}", headers: { X-Hook-Key: "${ref('HOOK_KEY')}", Authorization: "Bearer ${ref('HOOK_KEY')}" } } }`
  const out = redactConfig(parseConfig(yaml, { HOOK_KEY: 'secret-hook-key-0001', HOOK_QUERY: 'secret-hook-query-0002' })) as { guardrails: { webhook: { url: string, headers: unknown } } }
  assert.deepEqual(out.guardrails.webhook.headers, { 'X-Hook-Key': REDACTED, Authorization: REDACTED })
  assert.equal(new URL(out.guardrails.webhook.url).searchParams.get('key'), REDACTED)
})
