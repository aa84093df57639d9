import { test } from 'node:test'
import assert from 'node:assert/strict'
import pino from 'pino'
import { parseConfig } from '../../../src/config/load-config.ts'
import { createIdentity, publicUrlOf } from '../../../src/credentials/create-identity.ts'
import { isSwitchboardError } from '../../../src/errors.ts'
import { createMetrics } from '../../../src/observability/metrics.ts'

const log = pino({ level: 'silent' })

test('a config without any auth block gets no vault and no connect flow; an auth block a reload brings fails its requests with a clear error until a restart', async () => {
  const config = parseConfig(JSON.stringify({ upstreams: [{ name: 'plain', transport: 'streamable-http', url: 'http://127.0.0.1:9/mcp' }] }), {})
  const identity = createIdentity({ config, current: () => config, log, metrics: createMetrics() })
  assert.equal(identity.connect, undefined)
  const reloaded = parseConfig(JSON.stringify({ upstreams: [{ name: 'gh', transport: 'streamable-http', url: 'http://127.0.0.1:9/mcp', auth: { type: 'oauth', clientId: 'x' } }] }), {})
  const upstream = reloaded.upstreams[0]
  assert.ok(upstream !== undefined)
  const provider = identity.providers.for(upstream)
  await assert.rejects(provider.headersFor(upstream, undefined), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN') && /restart the gateway/.test(err.message))
  await identity.close()
})

test('the public URL is http.publicUrl without a trailing slash, else the listen address with a wildcard named as loopback', () => {
  assert.equal(publicUrlOf(parseConfig(JSON.stringify({ http: { publicUrl: 'https://mcp.example.com/' } }), {})), 'https://mcp.example.com')
  assert.equal(publicUrlOf(parseConfig(JSON.stringify({ listen: { host: '127.0.0.1', port: 8080 } }), {})), 'http://127.0.0.1:8080')
  assert.equal(publicUrlOf(parseConfig(JSON.stringify({ listen: { host: '0.0.0.0', port: 9000, allowUnauthenticated: true } }), {})), 'http://127.0.0.1:9000')
})
