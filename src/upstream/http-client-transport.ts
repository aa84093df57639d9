import type { Pool } from 'undici'
import type { HeaderSource } from '../credentials/credential-provider.ts'
import { SwitchboardError } from '../errors.ts'
import { CallSignal, type CancelSignal } from '../protocol/cancel-signal.ts'
import { encodeJson } from '../protocol/encode-json.ts'
import { type RequestId, isRecord } from '../protocol/json-rpc.ts'
import { bytesMessage, type RawMessage } from '../protocol/raw-answer.ts'
import { HttpExchange } from './http-exchange.ts'
import { type HttpMethod, RequestHeaders, type RpcHeaders } from './http-request-headers.ts'
import { SseReader } from './sse-reader.ts'
import { type OriginDispatchers, originDispatchers } from './origin-dispatchers.ts'
import { carrierOf, type TraceCarrier } from '../observability/tracing.ts'
import type { CloseOptions, ModernEnvelope, UpstreamTransport } from './upstream-transport.ts'
import { enveloped, modernHeaders } from './modern-request.ts'

export interface HttpClientTransportOptions {
  url: URL
  /** Headers sent with every request (fixed); never the client's. */
  headers: Readonly<Record<string, string>>
  /** The upstream's credentials, asked for on each request (see CredentialProvider); never the client's. */
  credentials?: HeaderSource
  /** Where the origin's socket pool comes from: the process's shared one unless given. */
  dispatchers?: OriginDispatchers
  /** How many times a request's stream that ended early is resumed with Last-Event-ID. */
  maxResumes?: number
}

const MAX_EVENT_CHARS = 64 * 1024 * 1024
const DEFAULT_RETRY_MS = 1_000
const DELETE_TIMEOUT_MS = 1_000
const DEFAULT_MAX_RESUMES = 3
const MAX_LISTEN_FAILURES = 3

type Response = HttpExchange

const ok = (response: Response): boolean => response.status >= 200 && response.status < 300

/**
 * MCP Streamable HTTP (2025-11-25) from the client side, on undici's dispatch API with a handler of
 * our own (http-exchange.ts), on a keep-alive pool per origin shared with every other transport to
 * it: several times cheaper per call than fetch's web streams, and cheaper than undici's request API
 * and its Readable per response. Unlike the SDK's transport it
 * knows which request each message arrived for (the POST whose stream carried it), lets one request
 * be given up (its POST and stream are aborted, so a hung call holds no socket), and tells a
 * status that fails one request from a network failure or an expired session that loses the
 * connection.
 */
export class HttpClientTransport implements UpstreamTransport {
  onmessage?: (message: unknown, related?: RequestId) => void
  takeRaw?: (message: string | RawMessage, related?: RequestId) => boolean
  onclose?: () => void
  onerror?: (error: Error) => void
  onlost?: (id: RequestId, error: Error) => void
  private readonly options: HttpClientTransportOptions
  /**
   * Each request's POST and stream, until its answer arrives or it is given up. A CallSignal, not an
   * AbortController: undici takes any object with AbortSignal's shape, and this one is a plain
   * object with a listener list (an AbortController per call cost ~2% of the gateway's CPU).
   */
  private readonly requests = new Map<RequestId, CallSignal>()
  /** Notification and response POSTs, and the standalone GET stream. */
  private readonly others = new Set<CallSignal>()
  /** Its requests' headers, with the session and the protocol version they carry. */
  private readonly headers: RequestHeaders
  private modern?: ModernEnvelope
  private retryMs = DEFAULT_RETRY_MS
  private closed = false
  private readonly pool: Pool
  private readonly dispatchers: OriginDispatchers
  private readonly path: string

  constructor (options: HttpClientTransportOptions) {
    this.options = options
    this.dispatchers = options.dispatchers ?? originDispatchers
    this.pool = this.dispatchers.acquire(options.url.origin)
    this.path = options.url.pathname + options.url.search
    this.headers = new RequestHeaders(options.headers)
  }

  async start (): Promise<void> {}

  setProtocolVersion (version: string): void {
    this.headers.protocolVersion = version
  }

  /**
   * Speak 2026-07-28 (undefined: back to 2025-11-25, before initialize): no session, and each
   * request carries the envelope in `_meta` and its method and name in headers.
   */
  setModern (envelope: ModernEnvelope | undefined): void {
    this.modern = envelope
    this.headers.protocolVersion = envelope?.version
  }

  abandon (id: RequestId): void {
    this.requests.get(id)?.abort(undefined)
    this.requests.delete(id)
  }

  async send (message: unknown): Promise<void> {
    if (this.closed) throw new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the transport is closed')
    let msg = isRecord(message) ? message : {}
    const id = typeof msg.method === 'string' && (typeof msg.id === 'string' || typeof msg.id === 'number') ? msg.id : undefined
    const modern = this.modern
    if (modern !== undefined) {
      // The era has no client notifications over HTTP (cancelling is closing the request) and no
      // server requests to answer.
      if (id === undefined) return
      msg = enveloped(msg, modern)
    }
    const rpc = modern === undefined ? undefined : modernHeaders(msg, modern)
    const controller = new CallSignal()
    if (id === undefined) this.others.add(controller)
    else this.requests.set(id, controller)
    let streaming = false
    try {
      const response = await this.fetch('POST', controller, encodeJson(msg), undefined, carrierOf(isRecord(msg.params) ? msg.params._meta : undefined), rpc)
      if (msg.method === 'initialize' && ok(response)) this.headers.sessionId = response.sessionId
      if (!ok(response)) {
        // An error status whose body is the JSON-RPC error for this request (2026-07-28 answers
        // some with HTTP 400 or 404) is that request's answer, not a transport failure.
        const answer = id === undefined ? undefined : await errorAnswer(response, id)
        if (answer === undefined) throw await this.statusError(response)
        this.onmessage?.(answer, id)
        return
      }
      if (id === undefined) {
        await response.dump()
        if (msg.method === 'notifications/initialized') this.listen(undefined, 0)
        return
      }
      const type = response.mediaType
      if (type === 'text/event-stream') {
        streaming = true
        void this.readRequestStream(response, id, controller, 0)
        return
      }
      if (type === 'application/json') {
        // The body's bytes as they arrived: a result is relayed from them (raw-answer.ts); decoded only to parse anything else.
        const message = bytesMessage(await response.bytes())
        if (this.takeRaw?.(message, id) === true) return
        const body = parseJson(message.bytes.toString())
        for (const item of Array.isArray(body) ? body : [body]) this.onmessage?.(item, id)
        return
      }
      await response.dump()
      throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream answered with content type "${type}"`)
    } finally {
      if (!streaming) this.release(id, controller)
    }
  }

  async close (options?: CloseOptions): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const controller of this.requests.values()) controller.abort(undefined)
    for (const controller of this.others) controller.abort(undefined)
    this.requests.clear()
    this.others.clear()
    if (this.headers.sessionId !== undefined && options?.keepSession !== true) {
      // Lets the upstream free the session at once; bounded, and its failure changes nothing.
      await this.fetch('DELETE', AbortSignal.timeout(DELETE_TIMEOUT_MS)).then(async r => { await r.dump() }, () => {})
    }
    // Its own requests were aborted above; the sockets are the origin's, closed with its last user.
    await this.dispatchers.release(this.options.url.origin)
    this.onclose?.()
  }

  private release (id: RequestId | undefined, controller: CallSignal): void {
    if (id === undefined) this.others.delete(controller)
    else if (this.requests.get(id) === controller) this.requests.delete(id)
  }

  /** `trace`: a request's W3C trace context from its `_meta`, sent in the HTTP headers too. */
  private fetch (method: HttpMethod, signal: CancelSignal, body?: string, lastEventId?: string, trace?: TraceCarrier, rpc?: RpcHeaders): Promise<Response> {
    const credentials = this.options.credentials
    if (credentials === undefined) return this.dispatch(method, signal, this.headers.for(method, undefined, lastEventId, trace, rpc), body)
    return this.fetchWith(credentials, method, signal, body, lastEventId, trace, rpc)
  }

  /** Credentials asked for each request, so a provider may refresh a token between two of them; revealed only here. */
  private async fetchWith (credentials: HeaderSource, method: HttpMethod, signal: CancelSignal, body?: string, lastEventId?: string, trace?: TraceCarrier, rpc?: RpcHeaders): Promise<Response> {
    return await this.dispatch(method, signal, this.headers.for(method, await credentials(), lastEventId, trace, rpc), body)
  }

  private dispatch (method: HttpMethod, signal: CancelSignal, headers: Record<string, string> | string[], body: string | undefined): Promise<Response> {
    // A redirect could carry the upstream's credentials elsewhere: it is reported, not followed
    // (undici's dispatch follows none). Its head fails with what the request failed with.
    const exchange = new HttpExchange(signal)
    // undici reports what it refuses synchronously (a header it cannot carry) to onError too.
    this.pool.dispatch({ path: this.path, method, headers, body }, exchange)
    return exchange.head
  }

  /** 404 on a known session: the upstream forgot it and a new connection is needed. Else: this request failed. */
  private async statusError (response: Response): Promise<SwitchboardError> {
    await response.dump()
    if (response.status === 404 && this.headers.sessionId !== undefined) {
      return new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the upstream no longer knows this session (HTTP 404)', { details: { status: 404 } })
    }
    if (response.status === 401 || response.status === 403) {
      // The credential, not the upstream: one user's expired token must not count against everyone's breaker.
      return new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `the upstream refused the credential (HTTP ${response.status})`, { details: { status: response.status } })
    }
    const location = response.location
    const why = location === undefined ? '' : ` (redirect to ${location}; configure that URL instead)`
    return new SwitchboardError('SB_ERR_UPSTREAM_HTTP', `the upstream answered HTTP ${response.status}${why}`, { details: { status: response.status } })
  }

  /** A request's own stream: everything on it belongs to that request; resumed if it ends before the answer. */
  private async readRequestStream (body: Response, id: RequestId, controller: CallSignal, resumes: number): Promise<void> {
    let answered = false
    let broke = false
    const lastEventId = await this.readEvents(body, controller, (data) => {
      if (this.takeRaw?.(data, id) === true) { answered = true; return }
      const message: unknown = JSON.parse(data)
      if (isRecord(message) && message.id === id && !('method' in message)) answered = true
      this.onmessage?.(message, id)
    }, () => { broke = true })
    if (answered || controller.aborted || this.closed) {
      this.release(id, controller)
      return
    }
    // 2026-07-28 has no resumption: a stream that ended early lost its answer.
    if (lastEventId !== undefined && this.modern === undefined && resumes < (this.options.maxResumes ?? DEFAULT_MAX_RESUMES)) {
      await sleep(this.retryMs)
      const resumed = await this.fetch('GET', controller, undefined, lastEventId).catch(() => undefined)
      if (resumed !== undefined && ok(resumed)) return await this.readRequestStream(resumed, id, controller, resumes + 1)
      if (resumed !== undefined) await resumed.dump()
    }
    this.release(id, controller)
    if (controller.aborted || this.closed) return
    // A stream cut under it (the upstream died, say) is news about the connection, not about this
    // request: when the upstream no longer answers, the connection is lost, and this call fails
    // with all the others it cut, as one failure of the upstream instead of one per call.
    if (broke && this.modern === undefined && !await this.reachable()) {
      void this.close()
      return
    }
    if (this.closed) return
    this.onlost?.(id, new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the upstream ended the response stream without an answer'))
  }

  /** Whether the upstream still answers and knows our session: any HTTP status but a 404 for it will do. */
  private async reachable (): Promise<boolean> {
    if (this.closed) return false
    const probe = new CallSignal()
    this.others.add(probe)
    try {
      const response = await this.fetch('GET', probe)
      const forgotten = response.status === 404 && this.headers.sessionId !== undefined
      // A stream that opened is not wanted: the standalone one is listen's.
      probe.abort(undefined)
      await response.dump()
      return !forgotten
    } catch {
      return false
    } finally {
      this.others.delete(probe)
    }
  }

  /**
   * The standalone GET stream, for what the upstream sends outside any request. Reopened when it
   * ends; an upstream that cannot be reached (or forgot the session) means the connection is lost.
   */
  private listen (lastEventId: string | undefined, attempt: number): void {
    if (this.closed) return
    const controller = new CallSignal()
    this.others.add(controller)
    void (async () => {
      let next = lastEventId
      let opened = false
      try {
        const response = await this.fetch('GET', controller, undefined, lastEventId)
        if (response.status === 405) {
          await response.dump()
          return
        }
        if (!ok(response)) throw await this.statusError(response)
        opened = true
        next = await this.readEvents(response, controller, (data) => { this.onmessage?.(JSON.parse(data)) }) ?? lastEventId
      } catch (err: unknown) {
        if (controller.aborted || this.closed) return
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
  private readEvents (body: Response, signal: CancelSignal, onEvent: (data: string) => void, onBroken?: () => void): Promise<string | undefined> {
    const reader = new SseReader(MAX_EVENT_CHARS, {
      event: (data) => {
        try {
          onEvent(data)
        } catch (err: unknown) {
          this.onerror?.(new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream sent an event that is not JSON: ${(err as Error).message}`))
        }
      },
      retry: (ms) => { this.retryMs = ms }
    })
    return new Promise((resolve) => {
      let overLong = false
      body.consume({
        data: (chunk) => {
          if (overLong || reader.push(chunk)) return
          overLong = true
          this.onerror?.(new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', 'the upstream sent an over-long event'))
          body.abort(new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', 'over-long event'))
        },
        end: (err) => {
          if (err !== undefined && !overLong && !signal.aborted && !this.closed) {
            this.onerror?.(new Error(`upstream stream broke: ${err.message}`))
            onBroken?.()
          }
          resolve(reader.lastEventId)
        }
      })
    })
  }
}

/** The JSON-RPC error for request `id` in an error response's JSON body, if that is what it holds. */
async function errorAnswer (response: Response, id: RequestId): Promise<Record<string, unknown> | undefined> {
  if (!(response.contentType ?? '').toLowerCase().startsWith('application/json')) return undefined
  let body: unknown
  try {
    body = JSON.parse(await response.text())
  } catch {
    return undefined
  }
  return isRecord(body) && body.id === id && isRecord(body.error) ? body : undefined
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
