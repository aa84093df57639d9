import { SwitchboardError } from '../errors.ts'
import { type RequestId, isRecord } from '../protocol/json-rpc.ts'
import { LineDecoder } from './line-decoder.ts'
import { carrierOf, type TraceCarrier } from '../observability/tracing.ts'
import type { UpstreamTransport } from './upstream-transport.ts'

export interface HttpClientTransportOptions {
  url: URL
  /** The upstream's own credentials, from config; never the client's. */
  headers: Readonly<Record<string, string>>
  /** How many times a request's stream that ended early is resumed with Last-Event-ID. */
  maxResumes?: number
}

const MAX_EVENT_CHARS = 64 * 1024 * 1024
const DEFAULT_RETRY_MS = 1_000
const DELETE_TIMEOUT_MS = 1_000
const DEFAULT_MAX_RESUMES = 3
const MAX_LISTEN_FAILURES = 3

interface SseEvent { data: string, event: string }

/**
 * MCP Streamable HTTP (2025-11-25) from the client side, on fetch. Unlike the SDK's transport it
 * knows which request each message arrived for (the POST whose stream carried it), lets one request
 * be given up (its POST and stream are aborted, so a hung call holds no socket), and tells a
 * status that fails one request from a network failure or an expired session that loses the
 * connection.
 */
export class HttpClientTransport implements UpstreamTransport {
  onmessage?: (message: unknown, related?: RequestId) => void
  onclose?: () => void
  onerror?: (error: Error) => void
  onlost?: (id: RequestId, error: Error) => void
  private readonly options: HttpClientTransportOptions
  /** Each request's POST and stream, until its answer arrives or it is given up. */
  private readonly requests = new Map<RequestId, AbortController>()
  /** Notification and response POSTs, and the standalone GET stream. */
  private readonly others = new Set<AbortController>()
  private sessionId?: string
  private protocolVersion?: string
  private retryMs = DEFAULT_RETRY_MS
  private closed = false

  constructor (options: HttpClientTransportOptions) {
    this.options = options
  }

  async start (): Promise<void> {}

  setProtocolVersion (version: string): void {
    this.protocolVersion = version
  }

  abandon (id: RequestId): void {
    this.requests.get(id)?.abort()
    this.requests.delete(id)
  }

  async send (message: unknown): Promise<void> {
    if (this.closed) throw new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the transport is closed')
    const msg = isRecord(message) ? message : {}
    const id = typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number') ? msg.id : undefined
    const controller = new AbortController()
    if (id === undefined) this.others.add(controller)
    else this.requests.set(id, controller)
    let streaming = false
    try {
      const response = await this.fetch('POST', controller.signal, JSON.stringify(message), undefined, carrierOf(isRecord(msg.params) ? msg.params._meta : undefined))
      if (msg.method === 'initialize' && response.ok) this.sessionId = response.headers.get('mcp-session-id') ?? undefined
      if (!response.ok) throw await this.statusError(response)
      if (id === undefined) {
        await response.body?.cancel()
        if (msg.method === 'notifications/initialized') this.listen(undefined, 0)
        return
      }
      const type = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase()
      if (type === 'text/event-stream' && response.body !== null) {
        streaming = true
        void this.readRequestStream(response.body, id, controller, 0)
        return
      }
      if (type === 'application/json') {
        const body = parseJson(await response.text())
        for (const item of Array.isArray(body) ? body : [body]) this.onmessage?.(item, id)
        return
      }
      await response.body?.cancel()
      throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream answered with content type "${type ?? ''}"`)
    } finally {
      if (!streaming) this.release(id, controller)
    }
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const controller of this.requests.values()) controller.abort()
    for (const controller of this.others) controller.abort()
    this.requests.clear()
    this.others.clear()
    if (this.sessionId !== undefined) {
      // Lets the upstream free the session at once; bounded, and its failure changes nothing.
      await this.fetch('DELETE', AbortSignal.timeout(DELETE_TIMEOUT_MS)).then(r => r.body?.cancel(), () => {})
    }
    this.onclose?.()
  }

  private release (id: RequestId | undefined, controller: AbortController): void {
    if (id === undefined) this.others.delete(controller)
    else if (this.requests.get(id) === controller) this.requests.delete(id)
  }

  /** `trace`: a request's W3C trace context from its `_meta`, sent in the HTTP headers too. */
  private async fetch (method: 'POST' | 'GET' | 'DELETE', signal: AbortSignal, body?: string, lastEventId?: string, trace?: TraceCarrier): Promise<Response> {
    const headers: Record<string, string> = { ...this.options.headers, ...trace }
    if (method === 'POST') {
      headers['content-type'] = 'application/json'
      headers.accept = 'application/json, text/event-stream'
    } else if (method === 'GET') {
      headers.accept = 'text/event-stream'
    }
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId
    if (this.protocolVersion !== undefined) headers['mcp-protocol-version'] = this.protocolVersion
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
    try {
      // A redirect could carry the upstream's credentials elsewhere: it is reported, not followed.
      return await fetch(this.options.url, { method, headers, body, signal, redirect: 'manual' })
    } catch (err: unknown) {
      if (signal.aborted) throw err
      const cause = (err as { cause?: { code?: string, message?: string } }).cause
      throw new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', `cannot reach the upstream: ${cause?.code ?? cause?.message ?? (err as Error).message}`, { cause: err })
    }
  }

  /** 404 on a known session: the upstream forgot it and a new connection is needed. Else: this request failed. */
  private async statusError (response: Response): Promise<SwitchboardError> {
    await response.body?.cancel()
    if (response.status === 404 && this.sessionId !== undefined) {
      return new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the upstream no longer knows this session (HTTP 404)', { details: { status: 404 } })
    }
    const location = response.headers.get('location')
    const why = location === null ? '' : ` (redirect to ${location}; configure that URL instead)`
    return new SwitchboardError('SB_ERR_UPSTREAM_HTTP', `the upstream answered HTTP ${response.status}${why}`, { details: { status: response.status } })
  }

  /** A request's own stream: everything on it belongs to that request; resumed if it ends before the answer. */
  private async readRequestStream (body: ReadableStream<Uint8Array>, id: RequestId, controller: AbortController, resumes: number): Promise<void> {
    let answered = false
    const lastEventId = await this.readEvents(body, controller.signal, (event) => {
      const message: unknown = JSON.parse(event.data)
      if (isRecord(message) && message.id === id && !('method' in message)) answered = true
      this.onmessage?.(message, id)
    })
    if (answered || controller.signal.aborted || this.closed) {
      this.release(id, controller)
      return
    }
    if (lastEventId !== undefined && resumes < (this.options.maxResumes ?? DEFAULT_MAX_RESUMES)) {
      await sleep(this.retryMs)
      const resumed = await this.fetch('GET', controller.signal, undefined, lastEventId).catch(() => undefined)
      if (resumed?.ok === true && resumed.body !== null) return await this.readRequestStream(resumed.body, id, controller, resumes + 1)
      await resumed?.body?.cancel()
    }
    this.release(id, controller)
    if (!controller.signal.aborted && !this.closed) {
      this.onlost?.(id, new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the upstream ended the response stream without an answer'))
    }
  }

  /**
   * The standalone GET stream, for what the upstream sends outside any request. Reopened when it
   * ends; an upstream that cannot be reached (or forgot the session) means the connection is lost.
   */
  private listen (lastEventId: string | undefined, attempt: number): void {
    if (this.closed) return
    const controller = new AbortController()
    this.others.add(controller)
    void (async () => {
      let next = lastEventId
      let opened = false
      try {
        const response = await this.fetch('GET', controller.signal, undefined, lastEventId)
        if (response.status === 405) {
          await response.body?.cancel()
          return
        }
        if (!response.ok || response.body === null) throw await this.statusError(response)
        opened = true
        next = await this.readEvents(response.body, controller.signal, (event) => { this.onmessage?.(JSON.parse(event.data)) }) ?? lastEventId
      } catch (err: unknown) {
        if (controller.signal.aborted || this.closed) return
        this.onerror?.(err as Error)
        if (err instanceof SwitchboardError && err.code === 'SB_ERR_UPSTREAM_CLOSED') {
          void this.close()
          return
        }
        if (attempt >= MAX_LISTEN_FAILURES) return
      } finally {
        this.others.delete(controller)
      }
      if (this.closed) return
      await sleep(this.retryMs)
      this.listen(next, opened ? 0 : attempt + 1)
    })()
  }

  /** Reads SSE events until the stream ends; answers the last event id seen. */
  private async readEvents (body: ReadableStream<Uint8Array>, signal: AbortSignal, onEvent: (event: SseEvent) => void): Promise<string | undefined> {
    const decoder = new TextDecoder()
    const lines = new LineDecoder(MAX_EVENT_CHARS)
    let data: string[] = []
    let event = ''
    let lastEventId: string | undefined
    const onLine = (line: string): void => {
      if (line === '') {
        // An event with no data is not dispatched (WHATWG SSE): a 2025-11-25 server's priming event
        // (an id and an empty data line) only gives the stream a resumption point.
        const text = data.join('\n')
        if (text !== '' && (event === '' || event === 'message')) {
          try {
            onEvent({ data: text, event })
          } catch (err: unknown) {
            this.onerror?.(new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream sent an event that is not JSON: ${(err as Error).message}`))
          }
        }
        data = []
        event = ''
        return
      }
      if (line.startsWith(':')) return
      const colon = line.indexOf(':')
      const field = colon === -1 ? line : line.slice(0, colon)
      const value = colon === -1 ? '' : line.slice(line[colon + 1] === ' ' ? colon + 2 : colon + 1)
      if (field === 'data') data.push(value)
      else if (field === 'event') event = value
      else if (field === 'id') lastEventId = value
      else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value)
    }
    try {
      for await (const chunk of body) {
        if (!lines.push(decoder.decode(chunk, { stream: true }), onLine)) {
          this.onerror?.(new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', 'the upstream sent an over-long event'))
          break
        }
      }
    } catch (err: unknown) {
      if (!signal.aborted && !this.closed) this.onerror?.(new Error(`upstream stream broke: ${(err as Error).message}`))
    }
    return lastEventId
  }
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream answered with a body that is not JSON: ${text.slice(0, 120)}`)
  }
}

function sleep (ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms).unref())
}
