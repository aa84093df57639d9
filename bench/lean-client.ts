// A lean MCP Streamable HTTP client for load generation: one session, keep-alive POSTs on an undici
// Pool (one request per connection at a time, no pipelining), each answer parsed from its JSON body
// or from the SSE `data:` of its response and matched to its request by id. No schema validation,
// no web streams, no shared AbortSignal: the driver should cost far less CPU per call than the
// proxy it measures (the SDK client costs ~0.8 ms per call on this machine).
import { Pool } from 'undici'
import type { JsonRpcAnswer } from './pending.ts'

/** What the bench asks for; the server's answer to initialize decides what is sent afterwards. */
export const REQUESTED_PROTOCOL_VERSION = '2025-11-25'
/** A Streamable HTTP client must accept both (the server chooses per POST). */
export const ACCEPT = 'application/json, text/event-stream'
const CLOSE_TIMEOUT_MS = 2_000

export interface LeanClientOptions {
  /** Connections kept open at most: the highest number of calls the driver will have in flight. */
  connections: number
  /** Bounds each request: headers and body each within this time. */
  timeoutMs: number
  headers?: Record<string, string>
}

export class LeanClient {
  readonly #pool: Pool
  readonly #path: string
  readonly #timeoutMs: number
  #headers: Record<string, string>
  #nextId = 1
  #sessionId: string | undefined
  #closed = false

  private constructor (url: URL, options: LeanClientOptions) {
    this.#pool = new Pool(url.origin, {
      connections: options.connections,
      pipelining: 1,
      keepAliveTimeout: 60_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: { timeout: options.timeoutMs }
    })
    this.#path = url.pathname + url.search
    this.#timeoutMs = options.timeoutMs
    this.#headers = { 'content-type': 'application/json', accept: ACCEPT, ...options.headers }
  }

  /** Opens a session: initialize, then notifications/initialized, as any MCP client does. */
  static async connect (url: URL, options: LeanClientOptions): Promise<LeanClient> {
    const client = new LeanClient(url, options)
    try {
      const { result, sessionId } = await client.#post('initialize', {
        protocolVersion: REQUESTED_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'switchboard-bench-lean', version: '0.0.0' }
      })
      const version = (result as { protocolVersion?: unknown }).protocolVersion
      if (typeof version !== 'string') throw new Error('initialize answered without a protocolVersion')
      client.#sessionId = sessionId
      client.#headers = { ...client.#headers, 'mcp-protocol-version': version, ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }) }
      await client.notify('notifications/initialized')
      return client
    } catch (err) {
      await client.close()
      throw err
    }
  }

  get sessionId (): string | undefined {
    return this.#sessionId
  }

  /** One request; resolves with its result, rejects on an HTTP error, a JSON-RPC error or a missing answer. */
  async request (method: string, params?: Record<string, unknown>): Promise<unknown> {
    return (await this.#post(method, params)).result
  }

  /**
   * One request whose answer is only counted, not parsed: the body's size in bytes and its last
   * bytes. A large answer then costs the driver no parse that would stall its other sessions.
   */
  async requestCounted (method: string, params: Record<string, unknown>): Promise<{ bytes: number, tail: string, status: number }> {
    if (this.#closed) throw new Error('lean client closed')
    const id = this.#nextId++
    const res = await this.#pool.request({ path: this.#path, method: 'POST', headers: this.#headers, body: JSON.stringify({ jsonrpc: '2.0', id, method, params }) })
    let bytes = 0
    let tail = Buffer.alloc(0)
    for await (const chunk of res.body) {
      const piece = chunk as Buffer
      bytes += piece.length
      tail = Buffer.concat([tail, piece.subarray(Math.max(0, piece.length - 256))]).subarray(-256)
    }
    return { bytes, tail: tail.toString('utf8'), status: res.statusCode }
  }

  async notify (method: string): Promise<void> {
    const res = await this.#pool.request({ path: this.#path, method: 'POST', headers: this.#headers, body: JSON.stringify({ jsonrpc: '2.0', method }) })
    const body = await res.body.text()
    if (res.statusCode !== 202 && res.statusCode !== 200) throw new Error(`${method}: HTTP ${res.statusCode} ${body.slice(0, 200)}`)
  }

  async #post (method: string, params: Record<string, unknown> | undefined): Promise<{ result: unknown, sessionId?: string }> {
    if (this.#closed) throw new Error('lean client closed')
    const id = this.#nextId++
    const res = await this.#pool.request({
      path: this.#path,
      method: 'POST',
      headers: this.#headers,
      body: JSON.stringify(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params })
    })
    const text = await res.body.text()
    if (res.statusCode !== 200) throw new Error(`${method}: HTTP ${res.statusCode} ${text.slice(0, 200)}`)
    const type = res.headers['content-type']
    const answer = String(type).startsWith('text/event-stream') ? answerInSse(text, id) : parseAnswer(text, id)
    if (answer === undefined) throw new Error(`${method}: no answer for id ${id} in ${text.slice(0, 200)}`)
    if (answer.error !== undefined) throw new Error(`${method}: JSON-RPC error ${String(answer.error.code)}: ${String(answer.error.message)}`)
    if (answer.result === undefined || answer.result === null) throw new Error(`${method}: answer without a result`)
    const session = res.headers['mcp-session-id']
    return { result: answer.result, sessionId: typeof session === 'string' ? session : undefined }
  }

  /** Ends the session (DELETE, bounded) and closes the connections; idempotent. */
  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#sessionId !== undefined) {
      await this.#pool.request({ path: this.#path, method: 'DELETE', headers: this.#headers, headersTimeout: CLOSE_TIMEOUT_MS, bodyTimeout: CLOSE_TIMEOUT_MS })
        .then(async res => { await res.body.dump() }, () => {})
    }
    const timer = new Promise<'timeout'>(resolve => setTimeout(() => { resolve('timeout') }, Math.min(this.#timeoutMs, CLOSE_TIMEOUT_MS)).unref())
    if (await Promise.race([this.#pool.close().then(() => 'closed' as const, () => 'closed' as const), timer]) === 'timeout') {
      await this.#pool.destroy().catch(() => {})
    }
  }
}

function parseAnswer (json: string, id: number): JsonRpcAnswer | undefined {
  let value: unknown
  try { value = JSON.parse(json) } catch { return undefined }
  const answer = value as JsonRpcAnswer | null
  return typeof answer === 'object' && answer !== null && answer.id === id ? answer : undefined
}

/** The JSON-RPC answer with this id among the events of an SSE body (notifications may come first). */
export function answerInSse (body: string, id: number): JsonRpcAnswer | undefined {
  let data: string[] = []
  const flush = (): JsonRpcAnswer | undefined => {
    const answer = data.length === 0 ? undefined : parseAnswer(data.join('\n'), id)
    data = []
    return answer
  }
  for (const raw of body.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (line === '') {
      const answer = flush()
      if (answer !== undefined) return answer
    } else if (line.startsWith('data:')) {
      data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5))
    }
  }
  return flush()
}
