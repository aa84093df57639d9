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
  assert.deepEqual(issues('rateLimits: { store: redis }'), ['rateLimits.redisUrl: required for store redis (or set the redis block)'])
  assert.deepEqual(issues('redis: { url: "http://x" }'), ['redis.url: must be a redis:// or rediss:// URL'])
})

test('redis takes a Sentinel block, and rate limits and pins without a URL of their own use it', () => {
  const config = parseConfig(`
redis: { sentinels: [{ host: 127.0.0.1, port: 26379 }, { host: 127.0.0.1, port: 26380 }], name: main, password: p, sentinelPassword: s }
sessions: { store: redis }
rateLimits: { store: redis }
pinning: { store: redis }
`, {})
  assert.equal(config.redis?.name, 'main')
  assert.equal(config.redis?.sentinels?.length, 2)
  assert.equal(config.rateLimits.redisUrl, undefined)
  assert.equal(config.pinning.redisUrl, undefined)
  assert.deepEqual(issues('redis: { cluster: [{ host: a, port: 7000 }], password: p, tls: true }'), [])
})

test('a mixed or incomplete redis block names the path', () => {
  assert.deepEqual(issues('redis: { keyPrefix: x }'), ['redis: needs one of url, sentinels, cluster'])
  assert.deepEqual(issues('redis: { url: "redis://a:1", cluster: [{ host: a, port: 1 }] }'), ['redis.cluster: only one of url, sentinels, cluster (url is set)'])
  assert.deepEqual(issues('redis: { sentinels: [{ host: a, port: 1 }] }'), ['redis.name: required with sentinels (the primary\'s name)'])
  assert.deepEqual(issues('redis: { cluster: [{ host: a, port: 1 }], name: x }'), ['redis.name: only used with sentinels'])
  assert.deepEqual(issues('redis: { url: "redis://a:1", tls: true }'), ['redis.tls: with url, use rediss:// for TLS'])
  assert.deepEqual(issues('redis: { cluster: [{ host: a }] }'), ['redis.cluster[0].port: Invalid input: expected number, received undefined'])
  assert.deepEqual(issues('redis: { sentinels: [] , name: m }'), ['redis.sentinels: Too small: expected array to have >=1 items'])
})
