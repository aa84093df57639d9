// What the byte-relay tests share: a gateway in front of the raw-bytes fixture (stdio or HTTP), the
// tools/call that hands the fixture its plan, and the check that an answer carries the upstream's
// result bytes under the client's own id.
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import type { EmitLine, EmitPlan } from '../fixtures/raw-bytes-server.ts'
import { ANSWER } from '../fixtures/raw-bytes-results.ts'
import { WebSocket, type ClientOptions } from 'ws'
import { rawInitialize, rawPost, startGateway, waitFor, waitReady, type RunningGateway } from './start-gateway.ts'
import { readEvents } from './sse-events.ts'

const FIXTURE = fileURLToPath(new URL('../fixtures/raw-bytes-server.ts', import.meta.url))

/** The upstream as the gateway knows it: stdio (the fixture as a child process) or an HTTP URL. */
export function rawUpstream (timeoutMs: number, url?: string): Record<string, unknown> {
  return url === undefined
    ? { name: 'raw', transport: 'stdio', command: process.execPath, args: ['--import', import.meta.resolve('tsx'), FIXTURE], timeoutMs }
    : { name: 'raw', transport: 'streamable-http', url, protocol: '2025-11-25', timeoutMs }
}

export interface Relay { gw: RunningGateway, sessionId: string, post: (body: string, headers?: Record<string, string>) => Promise<Response> }

/** A gateway in front of the raw-bytes fixture, and a 2025-11-25 session on it; `upstream`: more of the upstream's config. */
export async function startRelay (t: TestContext, options: { timeoutMs?: number, url?: string, http?: Record<string, unknown>, upstream?: Record<string, unknown> } = {}): Promise<Relay> {
  const gw = await startGateway(t, JSON.stringify({ ...(options.http === undefined ? {} : { http: options.http }), upstreams: [{ ...rawUpstream(options.timeoutMs ?? 10_000, options.url), ...options.upstream }] }))
  await waitReady(gw)
  assert.equal(gw.gateway.pool.status()[0]?.state, 'ready', gw.gateway.pool.status()[0]?.lastError)
  const { sessionId } = await rawInitialize(gw.url)
  return { gw, sessionId, post: async (body, headers = {}) => await rawPost(gw.url, body, { 'mcp-session-id': sessionId, ...headers }) }
}

/** The answer line the fixture writes, in the pieces `split` says. */
export function answer (split?: EmitLine['split'], extra: Partial<EmitLine> = {}): EmitLine {
  return { text: ANSWER, ...(split === undefined ? {} : { split }), ...extra }
}

/** A tools/call of `raw__emit` as a client writes it, with the id exactly as `idText` spells it. */
export function emitCall (idText: string, plan: EmitPlan, meta?: Record<string, unknown>): string {
  const params = { name: 'raw__emit', arguments: { plan }, ...(meta === undefined ? {} : { _meta: meta }) }
  return `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":${JSON.stringify(params)}}`
}

const HEAD = '{"jsonrpc":"2.0","id":'

/**
 * Asserts that `body` is an answer whose result is byte for byte `result` and whose id is the
 * client's (`idText` as the client wrote it: the same value, of the same type).
 */
export function assertRelayed (body: Buffer | string, idText: string, result: string, what = ''): void {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body
  const tail = Buffer.from(`,"result":${result}}`)
  const head = Buffer.from(HEAD)
  const context = `${what} (id ${idText}): ${bytes.subarray(0, 200).toString()}`
  assert.ok(bytes.subarray(0, head.length).equals(head), `the answer starts as an answer, ${context}`)
  assert.ok(bytes.length > head.length + tail.length && bytes.subarray(bytes.length - tail.length).equals(tail), `the result is the upstream's bytes, ${context}`)
  const id: unknown = JSON.parse(bytes.subarray(head.length, bytes.length - tail.length).toString('utf8'))
  assert.ok(Object.is(id, JSON.parse(idText)), `the client's own id, ${context}`)
}

/** The data of each event of an SSE response, until the answer to a request (an event with a result or error). */
export async function sseMessages (res: Response): Promise<string[]> {
  assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/)
  const events = await readEvents(res, evs => evs.some(e => /^\{"jsonrpc":"2\.0","id":/.test(e.data)))
  return events.map(e => e.data).filter(d => d !== '')
}

/** A JSON response's body, as bytes. */
export async function jsonBytes (res: Response): Promise<Buffer> {
  assert.equal(res.status, 200)
  assert.match(res.headers.get('content-type') ?? '', /application\/json/)
  return Buffer.from(await res.arrayBuffer())
}

/** A progress notification on the request's own token, and a log message, as the fixture writes them. */
export const progressLine = (n: number): EmitLine => ({ text: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":__TOKEN__,"progress":${n},"total":3,"message":"step ${n} é"}}` })
export const logLine = (n: number): EmitLine => ({ text: `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","logger":"raw","data":"log ${n} 😀"}}` })

/** A WebSocket session on the gateway, initialized, and every frame it receives as bytes (cleared after initialize). */
export async function webSocketSession (t: TestContext, gw: RunningGateway, options: ClientOptions = {}): Promise<{ socket: WebSocket, frames: Buffer[] }> {
  const socket = new WebSocket(gw.url.replace(/^http/, 'ws'), 'mcp', options)
  t.after(() => { socket.terminate() })
  const frames: Buffer[] = []
  socket.on('message', (data: Buffer) => { frames.push(data) })
  await new Promise((resolve, reject) => { socket.once('open', resolve); socket.once('error', reject) })
  socket.send(JSON.stringify({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'ws', version: '1' } } }))
  await waitFor(() => frames.length > 0, 'the initialize answer')
  socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
  return { socket, frames }
}
