// The lean driver for the legacy HTTP+SSE transport (a peer's SSE output): one GET stream that
// carries every answer, requests POSTed to the endpoint it announces (each answered 202), answers
// matched to requests by id. Same aims as lean-client.ts: undici Pool, no schema validation, no
// per-request AbortSignal; pending requests are timed out by one sweep timer, not a timer each.
import { Pool } from 'undici'
import { PendingRequests, type JsonRpcAnswer } from './pending.ts'

const CLOSE_TIMEOUT_MS = 2_000

export class LeanSseClient {
  readonly #pool: Pool
  readonly #timeoutMs: number
  readonly #pending: PendingRequests
  #endpoint: string | undefined
  #nextId = 1
  #closed = false

  private constructor (origin: string, connections: number, timeoutMs: number) {
    // One connection for the stream, the rest for the POSTs.
    this.#pool = new Pool(origin, { connections: connections + 1, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connect: { timeout: timeoutMs } })
    this.#timeoutMs = timeoutMs
    this.#pending = new PendingRequests(timeoutMs)
  }

  /** Opens the stream, waits for its endpoint event, then initialize and notifications/initialized. */
  static async connect (url: URL, options: { connections: number, timeoutMs: number }): Promise<LeanSseClient> {
    const client = new LeanSseClient(url.origin, options.connections, options.timeoutMs)
    try {
      await client.#open(url)
      await client.request('initialize', { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'switchboard-bench-lean-sse', version: '0.0.0' } })
      await client.#post({ jsonrpc: '2.0', method: 'notifications/initialized' })
      return client
    } catch (err) {
      await client.close()
      throw err
    }
  }

  async #open (url: URL): Promise<void> {
    // bodyTimeout 0: the stream stays open and may be quiet for long; close() ends it.
    const res = await this.#pool.request({ path: url.pathname + url.search, method: 'GET', headers: { accept: 'text/event-stream' }, bodyTimeout: 0 })
    if (res.statusCode !== 200) {
      await res.body.dump()
      throw new Error(`SSE stream: HTTP ${res.statusCode}`)
    }
    let buffer = ''
    let endpointSeen: (() => void) | undefined
    const endpoint = new Promise<void>((resolve, reject) => {
      endpointSeen = resolve
      setTimeout(() => { reject(new Error(`no endpoint event within ${this.#timeoutMs} ms`)) }, this.#timeoutMs).unref()
    })
    res.body.setEncoding('utf8')
    res.body.on('data', (chunk: string) => {
      buffer += chunk
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const event = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        this.#onEvent(event.replaceAll('\r', ''), endpointSeen)
      }
    })
    res.body.on('error', (err: Error) => { this.#pending.failAll(err) })
    res.body.on('end', () => { this.#pending.failAll(new Error('SSE stream ended')) })
    await endpoint
  }

  #onEvent (event: string, endpointSeen: (() => void) | undefined): void {
    let name = 'message'
    const data: string[] = []
    for (const line of event.split('\n')) {
      if (line.startsWith('event:')) name = line.slice(6).trim()
      else if (line.startsWith('data:')) data.push(line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5))
    }
    if (name === 'endpoint') {
      this.#endpoint = data.join('\n')
      endpointSeen?.()
      return
    }
    let answer: JsonRpcAnswer
    try { answer = JSON.parse(data.join('\n')) as JsonRpcAnswer } catch { return }
    this.#pending.settle(answer)
  }

  async request (method: string, params?: Record<string, unknown>): Promise<unknown> {
    if (this.#closed) throw new Error('lean SSE client closed')
    const id = this.#nextId++
    const answered = this.#pending.add(id)
    try {
      await this.#post(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params })
    } catch (err) {
      this.#pending.forget(id)
      throw err
    }
    return await answered
  }

  async #post (message: Record<string, unknown>): Promise<void> {
    if (this.#endpoint === undefined) throw new Error('no endpoint yet')
    const res = await this.#pool.request({ path: this.#endpoint, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(message) })
    const body = await res.body.text()
    if (res.statusCode !== 202 && res.statusCode !== 200) throw new Error(`POST ${String(message.method)}: HTTP ${res.statusCode} ${body.slice(0, 200)}`)
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#pending.close(new Error('lean SSE client closed'))
    // The stream never ends by itself: destroy the connections rather than wait for it (bounded too).
    const timer = new Promise<void>(resolve => setTimeout(resolve, CLOSE_TIMEOUT_MS).unref())
    await Promise.race([this.#pool.destroy().catch(() => {}), timer])
  }
}
