import { test } from 'node:test'
import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import type { Transport } from '@modelcontextprotocol/client'
import { pino } from 'pino'
import { configSchema } from '../../src/config/schema.ts'
import { createTransport } from '../../src/upstream/create-transport.ts'
import { RpcPeer } from '../../src/upstream/rpc-peer.ts'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'

test('many calls over a Streamable HTTP upstream do not pile listeners onto one AbortSignal', async (t) => {
  const http = await startControllableHttpServer({ name: 'web' })
  t.after(() => http.close())
  const config = configSchema.parse({ upstreams: [{ name: 'web', transport: 'streamable-http', url: http.url }] }).upstreams[0]!
  const transport = createTransport(config, { killAfterMs: 1000, log: pino({ level: 'silent' }), baseEnv: {} })
  const peer = new RpcPeer(transport)
  t.after(() => peer.close())
  await peer.start()
  await peer.request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } })
  await peer.notify('notifications/initialized')
  for (let i = 0; i < 300; i++) {
    const result = await peer.request('tools/call', { name: 'echo', arguments: { text: `n${i}` } })
    assert.deepEqual(result.structuredContent, { text: `n${i}` })
  }
  const signal = (transport as Transport & { _abortController?: AbortController })._abortController?.signal
  assert.ok(signal !== undefined, 'the SDK transport still keeps its shared controller (test relies on it)')
  assert.ok(getEventListeners(signal, 'abort').length < 5)
})
