import { isEncodingFailure } from '../protocol/encode-json.ts'
import type { JsonRpcMessage } from '../protocol/json-rpc.ts'
import { standIn } from '../protocol/wire.ts'
import { type EventStore, formatEventId, newStreamId } from '../session/event-store.ts'
import type { MessageSink } from '../session/session.ts'
import type { SseStream } from './sse-stream.ts'

/** Where a stream's events go while a client follows it: an SSE response, or another replica following it over the bus. */
export interface StreamConnection {
  send: (message: JsonRpcMessage, id?: string) => void
  close: () => void
  /** Set by the stream: called once the connection has closed. */
  onClosed: () => void
}

/**
 * One logical SSE stream of a session (a POST's answer or the standalone GET stream). Every event
 * gets an id and is recorded, so a client that lost the connection can resume the stream on a new
 * one with Last-Event-ID; meanwhile the stream goes on without a connection. A disconnect is not a
 * cancellation.
 */
export class ResumableStream implements MessageSink {
  readonly streamId: string
  private readonly sessionId: string
  private readonly store: EventStore
  private seq = 0
  private connection?: StreamConnection
  private ended = false
  /** Called once the stream has ended (its answer was sent, or the session closed). */
  onEnded: () => void = () => {}

  /** `streamId`: a POST's stream names its request and replica (requestStreamId); a GET stream's is random. */
  constructor (sessionId: string, store: EventStore, streamId: string = newStreamId()) {
    this.streamId = streamId
    this.sessionId = sessionId
    this.store = store
  }

  /** Whether a client is connected to it right now. */
  get open (): boolean { return this.connection !== undefined }
  get isEnded (): boolean { return this.ended }
  /** The id of the newest event (the priming event's before any message). */
  get lastEventId (): string { return formatEventId(this.streamId, this.seq) }

  /** Starts the stream on its first connection; `retryMs` sends a priming event (2025-11-25 clients). */
  start (connection: SseStream, retryMs: number | undefined): void {
    this.attach(connection)
    if (retryMs === undefined) return
    const id = formatEventId(this.streamId, this.seq)
    this.store.append(this.sessionId, this.streamId, id, null)
    connection.prime(id, retryMs)
  }

  /** A client resumed on a new connection: it replaces the old one. */
  attach (connection: StreamConnection): void {
    if (this.connection !== undefined && this.connection !== connection) this.connection.close()
    this.connection = connection
    connection.onClosed = () => { if (this.connection === connection) this.connection = undefined }
    if (this.ended) connection.close()
  }

  send (message: JsonRpcMessage): void {
    if (this.ended) return
    const id = formatEventId(this.streamId, ++this.seq)
    let sent = message
    try {
      this.store.append(this.sessionId, this.streamId, id, message)
    } catch (err: unknown) {
      // A message that cannot be written as JSON (nested too deeply, a cycle) is recorded and sent
      // as its stand-in, as messageJson would write it: the stream goes on for everything else.
      if (!isEncodingFailure(err)) throw err
      sent = standIn(message)
      this.store.append(this.sessionId, this.streamId, id, sent)
    }
    this.connection?.send(sent, id)
  }

  /** Ends the stream: its connection closes; what it sent stays replayable until evicted. */
  close (): void {
    if (this.ended) return
    this.ended = true
    this.connection?.close()
    this.connection = undefined
    this.onEnded()
  }
}
