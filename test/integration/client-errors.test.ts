import { test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { startGateway, type RunningGateway } from '../helpers/start-gateway.ts'
import type { TestContext } from 'node:test'

// What Node's HTTP parser refuses before any route runs still gets a JSON-RPC body, and the
// connection that sent it is the only one closed.

async function gateway (t: TestContext): Promise<RunningGateway> {
  return await startGateway(t, JSON.stringify({ upstreams: [] }))
}

/** Sends raw bytes on a new connection and returns everything the gateway writes before it closes. */
async function raw (port: number, request: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('utf8')
  socket.on('data', (chunk: string) => { received += chunk })
  socket.on('error', () => {})
  socket.write(request)
  await once(socket, 'close')
  return received
}

function bodyOf (response: string): { jsonrpc: string, id: null, error: { code: number, message: string } } {
  return JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))
}

test('headers over Node\'s 16 KB limit get 431 with a JSON-RPC -32600 body, and the gateway serves the next request', async (t) => {
  const gw = await gateway(t)
  const response = await raw(Number(new URL(gw.baseUrl).port), `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nmcp-name: ${'a'.repeat(17_000)}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`)
  assert.match(response, /^HTTP\/1\.1 431 /)
  assert.match(response, /content-type: application\/json/i)
  const body = bodyOf(response)
  assert.equal(body.jsonrpc, '2.0')
  assert.equal(body.id, null)
  assert.equal(body.error.code, -32600)
  assert.match(body.error.message, /headers exceed/)
  const health = await fetch(`${gw.baseUrl}/healthz`)
  assert.equal(health.status, 200)
})

test('a request line that is not HTTP gets 400 with a JSON-RPC -32600 body', async (t) => {
  const gw = await gateway(t)
  const response = await raw(Number(new URL(gw.baseUrl).port), 'THIS IS NOT HTTP\r\n\r\n')
  assert.match(response, /^HTTP\/1\.1 400 /)
  assert.equal(bodyOf(response).error.code, -32600)
})
