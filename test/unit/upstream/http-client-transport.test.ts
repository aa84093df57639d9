import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { isSwitchboardError } from '../../../src/errors.ts'
import { HttpClientTransport } from '../../../src/upstream/http-client-transport.ts'
import { RpcPeer } from '../../../src/upstream/rpc-peer.ts'
import { classifySendFailure } from '../../../src/upstream/send-failure.ts'

type Handler = (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>) => void

/** A raw HTTP endpoint: the wire is what these tests are about. */
async function serve (t: TestContext, handler: Handler): Promise<URL> {
  const server = createServer((req, res) => {
    let text = ''
    req.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => {
      handler(req, res, text === '' ? {} : JSON.parse(text) as Record<string, unknown>)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.after(async () => {
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`)
}

function sse (res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' })
  res.flushHeaders()
}

function peerFor (t: TestContext, url: URL): { peer: RpcPeer, transport: HttpClientTransport } {
  const transport = new HttpClientTransport({ url, headers: { authorization: 'Bearer upstream-own' } })
  const peer = new RpcPeer(transport)
  t.after(() => peer.close())
  return { peer, transport }
}

test('SSE framing: CRLF lines, comments, multi-line data and retry are understood', async (t) => {
  const url = await serve(t, (_req, res, body) => {
    sse(res)
    res.write(': keep-alive\r\nretry: 10\r\n\r\n')
    res.write('data: {"jsonrpc":"2.0","method":"notifications/message",\r\ndata: "params":{"level":"info","data":"x"}}\r\n\r\n')
    res.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { ok: true } })}\n\n`)
  })
  const { peer } = peerFor(t, url)
  const seen: string[] = []
  peer.onNotification = (method) => { seen.push(method) }
  assert.deepEqual(await peer.request('tools/call', { name: 'x' }), { ok: true })
  assert.deepEqual(seen, ['notifications/message'])
})

test('a priming event (an id and empty data, 2025-11-25) is a resumption point, not a message and not an error', async (t) => {
  const url = await serve(t, (_req, res, body) => {
    sse(res)
    res.write('id: prime-1\ndata:\n\n')
    res.end(`id: ev-2\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { ok: true } })}\n\n`)
  })
  const { peer } = peerFor(t, url)
  const errors: Error[] = []
  const notifications: string[] = []
  peer.onProtocolError = (err) => { errors.push(err) }
  peer.onNotification = (method) => { notifications.push(method) }
  assert.deepEqual(await peer.request('tools/call', { name: 'x' }), { ok: true })
  assert.deepEqual(errors.map(e => e.message), [])
  assert.deepEqual(notifications, [])
})

test('a response stream that ends without the answer and without event ids fails that request at once', async (t) => {
  const url = await serve(t, (_req, res) => { sse(res); res.end(': nothing\n\n') })
  const { peer } = peerFor(t, url)
  await assert.rejects(peer.request('tools/call', { name: 'x' }, { timeoutMs: 30_000 }), (err: unknown) =>
    isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED') && /without an answer/.test(err.message))
})

test('a response stream cut after an event id is resumed with Last-Event-ID and the answer arrives', async (t) => {
  let resumedWith: string | undefined
  let requestId: unknown
  const url = await serve(t, (req, res, body) => {
    if (req.method === 'POST') {
      requestId = body.id
      sse(res)
      res.end('id: ev-1\nretry: 5\ndata:\n\n')
      return
    }
    resumedWith = req.headers['last-event-id'] as string | undefined
    sse(res)
    res.end(`id: ev-2\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: requestId, result: { resumed: true } })}\n\n`)
  })
  const { peer } = peerFor(t, url)
  assert.deepEqual(await peer.request('tools/call', { name: 'x' }, { timeoutMs: 10_000 }), { resumed: true })
  assert.equal(resumedWith, 'ev-1')
})

test('a 404 on a known session means the connection is lost; a 503 fails only its request', async (t) => {
  const url = await serve(t, (_req, res, body) => {
    if (body.method === 'initialize') {
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'abc' })
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 's', version: '1' } } }))
      return
    }
    const name = (body.params as { name?: string } | undefined)?.name
    res.writeHead(name === 'busy' ? 503 : 404).end()
  })
  const { peer } = peerFor(t, url)
  const lost: Error[] = []
  peer.onConnectionLost = (err) => { lost.push(err) }
  await peer.request('initialize', {})
  await assert.rejects(peer.request('tools/call', { name: 'busy' }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_HTTP') && err.details.status === 503)
  assert.equal(lost.length, 0)
  await assert.rejects(peer.request('tools/call', { name: 'gone' }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED'))
  assert.equal(lost.length, 1)
})

test('a redirect is reported, not followed, so the upstream\'s credentials go nowhere else', async (t) => {
  let followed = false
  const elsewhere = await serve(t, (_req, res) => { followed = true; res.writeHead(200).end('{}') })
  const url = await serve(t, (_req, res) => { res.writeHead(307, { location: elsewhere.href }).end() })
  const { peer } = peerFor(t, url)
  await assert.rejects(peer.request('initialize', {}), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_HTTP') && err.message.includes(elsewhere.href))
  assert.equal(followed, false)
})

test('an unreachable upstream is a lost connection, with the network error in the message', async (t) => {
  const closed = createServer()
  await new Promise<void>(resolve => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise(resolve => closed.close(resolve))
  const { peer } = peerFor(t, new URL(`http://127.0.0.1:${port}/mcp`))
  const lost: Error[] = []
  peer.onConnectionLost = (err) => { lost.push(err) }
  await assert.rejects(peer.request('initialize', {}), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_CLOSED') && /ECONNREFUSED/.test(err.message))
  assert.equal(lost.length, 1)
})

test('an answer to the upstream\'s request that cannot be sent is reported, not dropped silently', { timeout: 15_000 }, async (t) => {
  const url = await serve(t, (req, res, body) => {
    if (body.method === 'tools/call') {
      sse(res)
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: 'up-1', method: 'ping' })}\n\n`)
      return
    }
    // Our answer to the ping: the connection breaks under it.
    req.socket.destroy()
  })
  const { peer } = peerFor(t, url)
  const lost: string[] = []
  const reported = new Promise<void>(resolve => { peer.onAnswerLost = (request) => { lost.push(request.method); resolve() } })
  const call = peer.request('tools/call', { name: 'x' }, { timeoutMs: 10_000 }).catch(() => undefined)
  await reported
  assert.deepEqual(lost, ['ping'])
  await peer.close()
  await call
})

test('a request undici cannot write (a header value with a line break) fails alone: not a lost connection', async (t) => {
  let answered = 0
  const url = await serve(t, (_req, res, body) => {
    answered++
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { ok: true } }))
  })
  const transport = new HttpClientTransport({ url, headers: { 'x-upstream-key': 'line\r\nbreak' } })
  t.after(() => transport.close())
  await assert.rejects(transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' }), (err: unknown) => {
    assert.ok(isSwitchboardError(err, 'SB_ERR_MESSAGE_UNSERIALIZABLE'), String(err))
    assert.equal(classifySendFailure(err).lost, false)
    return true
  })
  assert.equal(answered, 0)
})

test('a JSON answer written in pieces, one splitting a character, arrives whole; a byte order mark is dropped', async (t) => {
  const url = await serve(t, (_req, res, body) => {
    const bytes = Buffer.from(`\uFEFF${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { text: 'caf\u00e9 \u{1F600}' } })}`)
    const cut = bytes.indexOf(0xf0) + 2
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
    res.write(bytes.subarray(0, cut))
    setTimeout(() => { res.end(bytes.subarray(cut)) }, 20)
  })
  const { peer } = peerFor(t, url)
  assert.deepEqual(await peer.request('tools/call', { name: 'x' }), { text: 'caf\u00e9 \u{1F600}' })
})

test('a request given up while its stream is open closes that stream, and the next request is answered', async (t) => {
  let streamClosed: Promise<unknown> | undefined
  const url = await serve(t, (req, res, body) => {
    if ((body.params as { name?: string } | undefined)?.name === 'hang') {
      sse(res)
      res.write(': waiting\n\n')
      streamClosed = new Promise(resolve => req.socket.once('close', resolve))
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { ok: true } }))
  })
  const { peer } = peerFor(t, url)
  await assert.rejects(peer.request('tools/call', { name: 'hang' }, { timeoutMs: 100 }), (err: unknown) => isSwitchboardError(err, 'SB_ERR_UPSTREAM_TIMEOUT'))
  assert.ok(streamClosed !== undefined)
  const bound = new Promise(resolve => setTimeout(resolve, 5_000, 'still open').unref())
  assert.notEqual(await Promise.race([streamClosed, bound]), 'still open')
  assert.deepEqual(await peer.request('tools/call', { name: 'x' }), { ok: true })
})
