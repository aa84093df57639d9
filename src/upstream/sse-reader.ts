import { StringDecoder } from 'node:string_decoder'
import { LineDecoder } from './line-decoder.ts'

/** What a stream's reader reports: each message event's data, a `retry` the server asked for. */
export interface SseListener {
  /** A message event (no `event` field, or `message`) with its data lines joined. */
  event: (data: string) => void
  retry: (ms: number) => void
}

/**
 * Reads one text/event-stream body (WHATWG SSE) from its byte chunks: message events, the last
 * event id (where a resumed stream starts) and `retry`. Events of other types are skipped.
 */
export class SseReader {
  lastEventId: string | undefined
  private readonly lines: LineDecoder
  private readonly listener: SseListener
  /** Made only once a chunk ends inside a character: until then each chunk decodes whole. */
  private decoder: StringDecoder | undefined
  private data: string | undefined
  private type = ''

  constructor (maxEventChars: number, listener: SseListener) {
    this.lines = new LineDecoder(maxEventChars)
    this.listener = listener
  }

  /** Reads a chunk; false when an event has grown past the limit (it is dropped). */
  push (chunk: Buffer): boolean {
    // A chunk whose last byte is ASCII ends on a whole character (an event ends with a line break).
    const text = this.decoder === undefined && (chunk.length === 0 || (chunk[chunk.length - 1] as number) < 0x80)
      ? chunk.toString('utf8')
      : (this.decoder ??= new StringDecoder('utf8')).write(chunk)
    return this.lines.push(text, this.onLine)
  }

  private readonly onLine = (line: string): void => {
    if (line === '') {
      // An event with no data is not dispatched (WHATWG SSE): a 2025-11-25 server's priming event
      // (an id and an empty data line) only gives the stream a resumption point.
      const data = this.data
      const type = this.type
      this.data = undefined
      this.type = ''
      if (data !== undefined && data !== '' && (type === '' || type === 'message')) this.listener.event(data)
      return
    }
    if (line.charCodeAt(0) === 0x3a) return // ':' a comment
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? '' : line.slice(line.charCodeAt(colon + 1) === 0x20 ? colon + 2 : colon + 1)
    if (field === 'data') this.data = this.data === undefined ? value : this.data + '\n' + value
    else if (field === 'event') this.type = value
    else if (field === 'id') this.lastEventId = value
    else if (field === 'retry' && /^\d+$/.test(value)) this.listener.retry(Number(value))
  }
}
