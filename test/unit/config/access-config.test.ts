import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, parseConfig, type ConfigIssue } from '../../../src/config/load-config.ts'

function issuesOf (doc: unknown, env: NodeJS.ProcessEnv = {}): readonly ConfigIssue[] {
  try {
    parseConfig(JSON.stringify(doc), env)
  } catch (err: unknown) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`)
    return err.issues
  }
  assert.fail('the config was accepted')
}

const KEY = 'k'.repeat(24)

describe('config: auth, policies, rate limits, audit', () => {
  it('refuses a non-loopback listen address without auth, unless allowUnauthenticated says so', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'gw.internal']) {
      const issues = issuesOf({ listen: { host } })
      assert.deepEqual(issues.map(i => i.path), ['auth'], host)
      assert.match(issues[0]?.message ?? '', /not a loopback address/)
    }
    assert.equal(parseConfig(JSON.stringify({ listen: { host: '0.0.0.0', allowUnauthenticated: true } }), {}).auth, undefined)
    assert.ok(parseConfig(JSON.stringify({ listen: { host: '0.0.0.0' }, auth: { apiKeys: [{ id: 'a', key: KEY }] } }), {}).auth)
    for (const host of ['127.0.0.1', 'localhost', '::1', '127.0.0.2']) parseConfig(JSON.stringify({ listen: { host } }), {})
  })

  it('lists every mistake in auth, policies and rateLimits at once, with its path and without echoing keys', () => {
    const issues = issuesOf({
      auth: {
        apiKeys: [{ id: 'a', key: 'short' }, { id: 'a', key: KEY }, { id: 'role:x', key: KEY }],
        jwt: { issuer: 'https://idp', audience: 'api://gateway', jwksUri: 'ftp://idp/keys' }
      },
      policies: { default: 'maybe', rules: [{ principals: ['*'], effect: 'allow' }, { tools: ['*'], effect: 'permit' }] },
      rateLimits: { store: 'redis', rules: [{ key: 'session', limit: 0, windowMs: 1500 }] },
      audit: { arguments: 'yes' }
    })
    const paths = issues.map(i => i.path)
    for (const path of [
      'auth.apiKeys[0].key', 'auth.apiKeys[1].id', 'auth.apiKeys[2].id', 'auth.apiKeys[2].key', 'auth.jwt.jwksUri', 'auth.resource',
      'policies.default', 'policies.rules[0]', 'policies.rules[1].effect',
      'rateLimits.redisUrl', 'rateLimits.rules[0].key', 'rateLimits.rules[0].limit', 'rateLimits.rules[0].windowMs',
      'audit.arguments'
    ]) assert.ok(paths.includes(path), `${path} in ${JSON.stringify(issues)}`)
    assert.ok(!JSON.stringify(issues).includes(KEY), 'no key in any message')
  })

  it('fills defaults: allow-all policy, memory rate limits without rules, audit on without arguments', () => {
    const config = parseConfig('{}', {})
    assert.deepEqual(config.policies, { default: 'allow', rules: [] })
    assert.deepEqual({ ...config.rateLimits }, { store: 'memory', keyPrefix: 'switchboard:rl', redisTimeoutMs: 250, rules: [] })
    assert.equal(config.audit.enabled, true)
    assert.equal(config.audit.arguments, false)
    assert.ok(config.audit.redact.includes('password'))
    assert.equal(config.listen.allowUnauthenticated, false)
  })

  it('takes keys and the Redis URL from the environment', () => {
    const config = parseConfig(JSON.stringify({
      auth: { apiKeys: [{ id: 'a', key: '$' + '{A_KEY}', roles: ['dev'] }] },
      rateLimits: { store: 'redis', redisUrl: '$' + '{REDIS_URL}' }
    }), { A_KEY: KEY, REDIS_URL: 'redis://:pw@127.0.0.1:6390' })
    assert.equal(config.auth?.apiKeys[0]?.key, KEY)
    assert.equal(config.rateLimits.redisUrl, 'redis://:pw@127.0.0.1:6390')
    // Only the unset variable, not also "must be at least 16 characters" for the empty key.
    assert.deepEqual(issuesOf({ auth: { apiKeys: [{ id: 'a', key: '$' + '{NOPE}' }] } }), [{ path: 'auth.apiKeys[0].key', message: 'environment variable NOPE is not set' }])
  })

  it('accepts an upstream concurrency cap and rejects a bad one', () => {
    const ok = parseConfig(JSON.stringify({ upstreams: [{ name: 'w', transport: 'streamable-http', url: 'http://127.0.0.1:1/mcp', concurrency: { limit: 4 } }] }), {})
    assert.deepEqual({ ...ok.upstreams[0]?.concurrency }, { limit: 4, maxWaitMs: 5000, maxQueued: 100 })
    const issues = issuesOf({ upstreams: [{ name: 'w', transport: 'streamable-http', url: 'http://127.0.0.1:1/mcp', concurrency: { limit: 0, maxWaitMs: -1 } }] })
    assert.deepEqual(issues.map(i => i.path).sort(), ['upstreams[0].concurrency.limit', 'upstreams[0].concurrency.maxWaitMs'])
  })
})
