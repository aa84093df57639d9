import { test } from 'node:test'
import assert from 'node:assert/strict'
import { configIssues } from '../../helpers/config-issues.ts'
import { parseConfig } from '../../../src/config/load-config.ts'

function issues (yaml: string): string[] {
  return configIssues(yaml)
}

test('sessions.store defaults to memory and needs no Redis', () => {
  const config = parseConfig('{}', {})
  assert.equal(config.sessions.store, 'memory')
  assert.equal(config.redis, undefined)
})

test('sessions.store: redis without a redis block names the path', () => {
  assert.deepEqual(issues('sessions: { store: redis }'), ['redis: required when sessions.store is redis'])
})

test('rate limits and pins on Redis take redis.url when they name none; their own redisUrl still wins', () => {
  const config = parseConfig(`
redis: { url: "redis://127.0.0.1:6390" }
sessions: { store: redis }
rateLimits: { store: redis }
pinning: { store: redis }
`, {})
  assert.equal(config.redis?.keyPrefix, 'switchboard')
  assert.equal(config.rateLimits.redisUrl, 'redis://127.0.0.1:6390')
  assert.equal(config.pinning.redisUrl, 'redis://127.0.0.1:6390')
  const own = parseConfig('redis: { url: "redis://a:1" }\nrateLimits: { store: redis, redisUrl: "redis://b:2" }', {})
  assert.equal(own.rateLimits.redisUrl, 'redis://b:2')
})

test('a Redis rate limit with no URL anywhere, and a bad redis.url, name their paths', () => {
  assert.deepEqual(issues('rateLimits: { store: redis }'), ['rateLimits.redisUrl: required for store redis (or set redis.url)'])
  assert.deepEqual(issues('redis: { url: "http://x" }'), ['redis.url: must be a redis:// or rediss:// URL'])
})
