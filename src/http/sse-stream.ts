import type { ServerResponse } from 'node:http'
import type { JsonRpcMessage } from '../protocol/json-rpc.ts'
import { messageBody, type WireBody } from '../protocol/wire.ts'
import type { MessageSink } from '../session/session.ts'

// A client that stops reading must not grow the gateway's memory without bound: past this much
// unsent data, on an SSE stream or a WebSocket, it is cut off.
export const MAX_UNSENT_BYTES = 8 * 1024 * 1024

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  // nginx and friends buffer streams unless told not to.
  'x-accel-buffering': 'no'
}

/** One SSE response carrying JSON-RPC messages, with comment keepalives so idle proxies keep it open. */
export class SseStream implements MessageSink {
  private readonly raw: ServerResponse
  private readonly keepAlive?: NodeJS.Timeout
  private ended = false
  onClosed: () => void = () => {}

  constructor (raw: ServerResponse, headers: Record<string, string>, keepAliveMs?: number) {
    this.raw = raw
    raw.writeHead(200, { ...SSE_HEADERS, ...headers })
    raw.flushHeaders()
    if (keepAliveMs !== undefined) {
      this.keepAlive = setInterval(() => { this.write(': keepalive\n\n') }, keepAliveMs)
      this.keepAlive.unref()
    }
    raw.on('close', () => { this.finish() })
  }

  get open (): boolean { return !this.ended }

  send (message: JsonRpcMessage, id?: string): void {
    this.write(messageBody(message, `${id === undefined ? '' : `id: ${id}\n`}event: message\ndata: `, '\n\n'))
  }

  /** A named event with plain-text data (the legacy transport's `endpoint` event). */
  event (name: string, data: string): void {
    this.write(`event: ${name}\ndata: ${data}\n\n`)
  }

  /** The first event of a resumable stream: an id to resume from and how long to wait before reconnecting. */
  prime (id: string, retryMs: number): void {
    this.write(`id: ${id}\nretry: ${retryMs}\ndata: \n\n`)
  }

  private write (body: WireBody): void {
    if (this.ended) return
    if (this.raw.writableLength > MAX_UNSENT_BYTES) {
      this.close()
      return
    }
    if (typeof body === 'string') {
      this.raw.write(body)
      return
    }
    // A large relayed answer: its pieces go out as they are, in one batch of writes.
    this.raw.cork()
    for (const piece of body) this.raw.write(piece)
    this.raw.uncork()
  }

  close (): void {
    if (this.ended) return
    this.raw.end()
    this.finish()
  }

  private finish (): void {
    if (this.ended) return
    this.ended = true
    if (this.keepAlive !== undefined) clearInterval(this.keepAlive)
    this.onClosed()
  }
}
