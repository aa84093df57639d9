import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { isSwitchboardError } from '../../../src/errors.ts'
import { encodeJson } from '../../../src/protocol/encode-json.ts'
import { RpcPeer } from '../../../src/upstream/rpc-peer.ts'
import type { UpstreamTransport } from '../../../src/upstream/upstream-transport.ts'
import { waitFor } from '../../helpers/start-gateway.ts'

/** A transport that encodes as the real ones do and keeps what it wrote; `raw`: JSON.stringify as the SDK's do. */
function recordingTransport (raw = false): UpstreamTransport & { written: unknown[] } {
  const written: unknown[] = []
  return {
    written,
    start: async () => {},
    close: async () => {},
    send: async (message: unknown) => { written.push(JSON.parse(raw ? JSON.stringify(message) : encodeJson(message))) }
  }
}

let deep: Record<string, unknown> = {}
for (let i = 0; i < 20_000; i++) deep = { a: deep }

describe('RpcPeer and a message that cannot be encoded', () => {
  for (const raw of [false, true]) {
    it(`fails only that request and keeps the connection (${raw ? 'a transport that throws JSON.stringify\'s own error' : 'our transports'})`, async () => {
      const transport = recordingTransport(raw)
      const peer = new RpcPeer(transport)
      let lost = 0
      peer.onConnectionLost = () => { lost++ }
      const other = peer.request('tools/call', { name: 'slow' })
      await assert.rejects(peer.request('tools/call', { name: 'echo', arguments: { deep } }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_MESSAGE_UNSERIALIZABLE') && err.details.tooDeep === true)
      assert.equal(lost, 0, 'the connection was not taken for lost')
      assert.equal(peer.isClosed, false)
      transport.onmessage?.({ jsonrpc: '2.0', id: 1, result: { content: [] } })
      assert.deepEqual(await other, { content: [] }, 'the other request in flight was answered')
    })
  }

  it('answers an upstream request with an error when our answer cannot be encoded', async () => {
    const transport = recordingTransport()
    const peer = new RpcPeer(transport)
    peer.onRequest = async () => ({ deep })
    transport.onmessage?.({ jsonrpc: '2.0', id: 'up-1', method: 'sampling/createMessage', params: {} })
    await waitFor(() => transport.written.length > 0, 'the answer to be written')
    assert.deepEqual(transport.written, [{ jsonrpc: '2.0', id: 'up-1', error: { code: -32603, message: 'Internal error: the answer cannot be written as JSON' } }])
  })
})
