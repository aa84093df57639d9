import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { once } from 'node:events'
import { endThenDestroy } from '../../../src/net/end-then-destroy.ts'

const LINGER_MS = 200

/** A loopback server whose first connection is handed to `onSocket`, and a client connected to it. */
async function pair (t: TestContext, onSocket: (socket: net.Socket) => void): Promise<{ client: net.Socket, clientClosed: Promise<void>, serverSide: Promise<net.Socket> }> {
  const server = net.createServer({ allowHalfOpen: true })
  const serverSide = new Promise<net.Socket>((resolve) => {
    server.once('connection', (socket) => { socket.on('error', () => {}); onSocket(socket); resolve(socket) })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.close() })
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1')
  client.on('error', () => {})
  // The server's side may reset before the client sees its connect.
  const clientClosed = new Promise<void>((resolve) => { client.once('close', () => { resolve() }) })
  t.after(() => { client.destroy() })
  return { client, clientClosed, serverSide }
}

test('a client that reads gets the whole answer and the end of the stream', async (t) => {
  const { client } = await pair(t, (socket) => { endThenDestroy(socket, 'HTTP/1.1 408 Request Timeout\r\n\r\n', LINGER_MS) })
  let received = ''
  client.setEncoding('utf8')
  client.on('data', (chunk: string) => { received += chunk })
  await once(client, 'end')
  assert.equal(received, 'HTTP/1.1 408 Request Timeout\r\n\r\n')
})

test('a client that never reads and keeps writing is dropped after the linger', async (t) => {
  const { client, clientClosed, serverSide } = await pair(t, (socket) => { endThenDestroy(socket, 'HTTP/1.1 408 Request Timeout\r\n\r\n', LINGER_MS) })
  client.pause()
  const drip = setInterval(() => { if (!client.destroyed) client.write('x') }, 20)
  t.after(() => { clearInterval(drip) })
  const socket = await serverSide
  await once(socket, 'close')
  // The client learns it from the reset on its next write.
  await clientClosed
})

test('a socket that cannot take an answer is dropped at once', async (t) => {
  const { clientClosed, serverSide } = await pair(t, (socket) => { endThenDestroy(socket, undefined, 60_000) })
  await once(await serverSide, 'close')
  await clientClosed
})
