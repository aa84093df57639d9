import type { Dispatcher } from 'undici'
import { SwitchboardError } from '../errors.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'

/** Where a response's body goes: each chunk as it arrives, then its end (`error`: it broke or was aborted). */
export interface BodySink {
  data: (chunk: Buffer) => void
  end: (error?: Error) => void
}

/** What a discarded body may still bring before its socket is closed instead of reused (undici's dump default). */
const MAX_DUMP_BYTES = 128 * 1024

/**
 * One HTTP exchange with an upstream, on undici's `dispatch` API with a handler of our own. Of the
 * response it keeps its status and the three headers the transport reads, found in undici's raw
 * header list without building an object of all of them; its body goes chunk by chunk to one sink
 * (a stream's events, a JSON text, nothing). The request API this replaces built, per response, a
 * headers object, a Readable stream with its listeners and an async resource: a measurable share
 * of each call through an HTTP upstream.
 *
 * `head` settles when the response's status and headers arrive (informational ones are skipped), or
 * fails with the error the request fails with (`requestError`). `signal` aborts it at any point.
 */
export class HttpExchange implements Dispatcher.DispatchHandler {
  status = 0
  /** The media type, lower case, without its parameters ('' when there is none). */
  mediaType = ''
  /** The whole content-type header, for messages. */
  contentType: string | undefined
  sessionId: string | undefined
  location: string | undefined
  readonly head: Promise<HttpExchange>
  private resolveHead!: (exchange: HttpExchange) => void
  private rejectHead!: (error: Error) => void
  private headSettled = false
  private abortRequest: ((error: Error) => void) | undefined
  private abortedWith: Error | undefined
  private readonly signal: CancelSignal
  private sink: BodySink | undefined
  /** Body chunks that arrived before a sink was given. */
  private queued: Buffer[] | undefined
  /** The body's end: null for a whole body, an Error for a broken or aborted one. */
  private ending: Error | null | undefined

  constructor (signal: CancelSignal) {
    this.signal = signal
    this.head = new Promise((resolve, reject) => {
      this.resolveHead = resolve
      this.rejectHead = reject
    })
    if (signal.aborted) this.abort(abortError(signal))
    else signal.addEventListener('abort', this.onAbort)
  }

  /** Ends the exchange at once: its socket is closed, its head (if still awaited) and body fail with `error`. */
  abort (error: Error): void {
    if (this.abortedWith !== undefined || this.ending !== undefined) return
    this.abortedWith = error
    if (this.abortRequest !== undefined) this.abortRequest(error)
    // Not yet on a socket: undici aborts it when it gets one (onConnect); what waits on it is told now.
    this.finish(error)
  }

  /** Hands the body to `sink`: what already arrived at once, the rest as it comes. */
  consume (sink: BodySink): void {
    const queued = this.queued
    this.queued = undefined
    const ended = this.ending !== undefined
    if (!ended) this.sink = sink
    if (queued !== undefined) {
      for (const chunk of queued) {
        // Ended by one of these chunks (a sink that aborts): the sink was told already.
        if (!ended && this.sink !== sink) return
        sink.data(chunk)
      }
    }
    if (ended) sink.end(this.ending ?? undefined)
  }

  /** The whole body as text (a UTF-8 byte order mark dropped). */
  async text (): Promise<string> {
    const pieces = await this.bytes()
    return pieces.length === 1 ? (pieces[0] as Buffer).toString('utf8') : Buffer.concat(pieces).toString('utf8')
  }

  /** The whole body as the chunks it arrived in, never joined (a UTF-8 byte order mark dropped). */
  bytes (): Promise<Buffer[]> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = []
      this.consume({
        data: (chunk) => { chunks.push(chunk) },
        end: (error) => {
          if (error !== undefined) {
            reject(error)
            return
          }
          resolve(withoutByteOrderMark(chunks))
        }
      })
    })
  }

  /** Drops the body: the socket goes back to the pool, or is closed if the body is long. Never fails. */
  dump (): Promise<void> {
    return new Promise((resolve) => {
      let length = 0
      this.consume({
        data: (chunk) => {
          length += chunk.length
          if (length > MAX_DUMP_BYTES) this.abort(new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'body discarded'))
        },
        end: () => { resolve() }
      })
    })
  }

  // undici's handler, in the form whose headers come raw: its newer form (onResponseStart) is this
  // one wrapped, with every response's headers parsed into an object first.

  onConnect (abort: (error?: Error) => void): void {
    if (this.abortedWith !== undefined) abort(this.abortedWith)
    else this.abortRequest = abort
  }

  onHeaders (statusCode: number, rawHeaders: Buffer[] | null, _resume: () => void, _statusText: string): boolean {
    if (statusCode < 200 || this.headSettled) return true
    this.status = statusCode
    if (rawHeaders !== null) this.readHeaders(rawHeaders)
    this.headSettled = true
    this.resolveHead(this)
    return true
  }

  onData (chunk: Buffer): boolean {
    if (this.sink !== undefined) this.sink.data(chunk)
    else if (this.queued === undefined) this.queued = [chunk]
    else this.queued.push(chunk)
    return true
  }

  onComplete (_trailers: string[] | null): void {
    this.finish(null)
  }

  onError (error: Error): void {
    // Before the head: the request failed. After it: the body broke off, as undici tells it.
    this.finish(this.abortedWith ?? (this.headSettled ? error : requestError(error)))
  }

  private readonly onAbort = (): void => { this.abort(abortError(this.signal)) }

  private finish (ending: Error | null): void {
    if (this.ending !== undefined) return
    this.ending = ending
    this.signal.removeEventListener('abort', this.onAbort)
    if (!this.headSettled) {
      this.headSettled = true
      this.rejectHead(ending ?? new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the upstream sent no response'))
      return
    }
    const sink = this.sink
    this.sink = undefined
    sink?.end(ending ?? undefined)
  }

  /** The first content-type, mcp-session-id and location; names compared without building strings of the others. */
  private readHeaders (raw: Buffer[]): void {
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = raw[i] as Buffer | string
      const length = name.length
      if (length !== 12 && length !== 14 && length !== 8) continue
      const key = typeof name === 'string' ? name.toLowerCase() : name.toString('latin1').toLowerCase()
      if (key !== 'content-type' && key !== 'mcp-session-id' && key !== 'location') continue
      const item = raw[i + 1] as Buffer | string
      const value = typeof item === 'string' ? item : item.toString('latin1')
      if (key === 'content-type') {
        if (this.contentType !== undefined) continue
        this.contentType = value
        const semicolon = value.indexOf(';')
        this.mediaType = (semicolon === -1 ? value : value.slice(0, semicolon)).trim().toLowerCase()
      } else if (key === 'mcp-session-id') {
        this.sessionId ??= value
      } else if (key === 'location') {
        this.location ??= value
      }
    }
  }
}

function abortError (signal: CancelSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', 'the request was aborted')
}

/** What a request that could not be made, or whose response broke off, fails with. */
function requestError (err: unknown): Error {
  const e = err as { code?: string, message?: string, cause?: { code?: string, message?: string } }
  // undici refused to write this request (a header value it cannot carry): the request's fault
  // alone, never a lost connection.
  if (e.code === 'UND_ERR_INVALID_ARG') return new SwitchboardError('SB_ERR_MESSAGE_UNSERIALIZABLE', `the request cannot be written for the upstream: ${e.message ?? 'invalid argument'}`, { cause: err, details: { tooDeep: false } })
  return new SwitchboardError('SB_ERR_UPSTREAM_CLOSED', `cannot reach the upstream: ${e.cause?.code ?? e.code ?? e.cause?.message ?? e.message ?? String(err)}`, { cause: err })
}

/** The chunks without a leading UTF-8 byte order mark (which may itself be cut across chunks). */
function withoutByteOrderMark (chunks: Buffer[]): Buffer[] {
  const head = chunks.length > 0 && (chunks[0] as Buffer).length < 3 ? Buffer.concat(chunks) : chunks[0]
  if (head === undefined || head.length < 3 || head[0] !== 0xef || head[1] !== 0xbb || head[2] !== 0xbf) return chunks
  return head === chunks[0] ? [head.subarray(3), ...chunks.slice(1)] : [head.subarray(3)]
}
