import { randomBytes } from 'node:crypto'
import { keptJson, storedMessage } from '../protocol/wire.ts'

// Streamable HTTP resumability (transports §Resumability): each SSE event carries an id, and a
// client that lost a stream reconnects with Last-Event-ID to get the rest of *that* stream.

export interface StoredEvent { id: string, message: unknown }

export interface EventStore {
  /**
   * Records an event of one stream. The id is chosen by the caller with formatEventId(streamId, seq),
   * seq strictly increasing within the stream. Throws (a programming error) when the id is malformed,
   * belongs to another stream or does not increase, or when the message cannot be serialised.
   */
  append (sessionId: string, streamId: string, id: string, message: unknown): void
  /**
   * Events of that stream sent after the given event id, oldest first; [] after the newest.
   * undefined when the session, the stream or the id is unknown, or when events after the id were
   * evicted: the client cannot resume and must be told so.
   */
  replayAfter (sessionId: string, streamId: string, afterId: string): Promise<StoredEvent[] | undefined>
  /** Forgets everything of the session (it was deleted or expired). The owner stops appending to it first. */
  dropSession (sessionId: string): void
  close (): Promise<void>
  /** Present when other replicas can resume this one's streams (a shared store). */
  readonly standalone?: StandaloneStreams
}

/**
 * What became of a notification for a session whose standalone stream this replica does not carry:
 * stored in that stream (a resume anywhere replays it), stored already by another replica
 * (duplicate), not needed because a live replica carries the stream (held), no stream to put it in
 * (no_stream: the client never opened one, or it expired), or the store failed.
 */
export type UnheldOutcome = 'stored' | 'duplicate' | 'held' | 'no_stream' | 'failed'

/** Who carries each session's standalone (GET) stream, so that a stream outlives its replica. */
export interface StandaloneStreams {
  /** This replica carries the session's standalone stream now. */
  carry: (sessionId: string, streamId: string) => void
  /** The session is gone from this replica. */
  forget: (sessionId: string) => void
  /**
   * Appends a session-wide message to the session's standalone stream when no live replica carries
   * it, at most once per `once` key across replicas. Never rejects.
   */
  appendUnheld: (sessionId: string, once: string, message: unknown) => Promise<UnheldOutcome>
  /** Whether a replica is alive (subscribed to its channel); undefined when the store cannot tell. Never rejects. */
  replicaAlive: (replica: string) => Promise<boolean | undefined>
}

export const MAX_EVENT_ID_LENGTH = 200

// '.' is outside the base64url alphabet of stream ids, so an event id splits in exactly one way.
const EVENT_ID_SEPARATOR = '.'
const STREAM_ID_PATTERN = /^[A-Za-z0-9_-]+$/
// Canonical decimal only (no sign, no leading zero, at most 16 digits): one seq has one spelling.
const EVENT_ID_PATTERN = /^([A-Za-z0-9_-]+)\.(0|[1-9][0-9]{0,15})$/

export function formatEventId (streamId: string, seq: number): string {
  if (!STREAM_ID_PATTERN.test(streamId)) throw new TypeError(`stream id must be base64url text, got ${JSON.stringify(streamId)}`)
  if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`event seq must be a non-negative safe integer, got ${seq}`)
  const id = streamId + EVENT_ID_SEPARATOR + seq
  if (id.length > MAX_EVENT_ID_LENGTH) throw new RangeError(`event id longer than ${MAX_EVENT_ID_LENGTH} characters`)
  return id
}

/** Strict inverse of formatEventId: whatever it accepts formats back to the same text. */
export function parseEventId (id: string): { streamId: string, seq: number } | undefined {
  if (typeof id !== 'string' || id.length > MAX_EVENT_ID_LENGTH) return undefined
  const match = EVENT_ID_PATTERN.exec(id)
  if (match === null) return undefined
  const [, streamId, digits] = match
  if (streamId === undefined || digits === undefined) return undefined
  const seq = Number(digits)
  return Number.isSafeInteger(seq) ? { streamId, seq } : undefined
}

/** 96 random bits as 16 base64url characters. */
export function newStreamId (): string {
  return randomBytes(12).toString('base64url')
}

export interface MemoryEventStoreLimits {
  /** Newest events kept per stream. */
  maxEventsPerStream: number
  /** Streams kept per session; the one appended to least recently goes first. */
  maxStreamsPerSession: number
  /** UTF-8 bytes of serialised messages kept per session; the session's oldest events go first. */
  maxBytesPerSession: number
}

interface EventNode {
  readonly seq: number
  readonly id: string
  // Serialised at append: replay is immune to later mutation of the message object, and the
  // byte count comes for free. Emptied on eviction so the text is freed before compaction.
  json: string
  readonly bytes: number
  readonly stream: StreamLog
  evicted: boolean
}

interface StreamLog {
  // Live events are events[head..], ascending seq; events before head are evicted shells.
  events: EventNode[]
  head: number
  lastSeq: number
  // The newest evicted seq (-1: none). Resuming after exactly this id loses nothing.
  evictedThroughSeq: number
}

interface SessionLog {
  // Map order is eviction order: an append moves its stream to the end.
  readonly streams: Map<string, StreamLog>
  lastStreamId: string | undefined
  // Every event of the session in append order, so the byte cap can evict the oldest across streams.
  // Live events are at order[orderHead..]; `stale` counts evicted ones among them, skipped lazily.
  order: EventNode[]
  orderHead: number
  stale: number
  bytes: number
}

// Compaction runs when at least half of an array is dead, which keeps appends O(1) amortised.
const COMPACT_MIN = 64

export class MemoryEventStore implements EventStore {
  private readonly limits: Readonly<MemoryEventStoreLimits>
  private readonly sessions = new Map<string, SessionLog>()
  private closed = false

  constructor (limits: MemoryEventStoreLimits) {
    for (const name of ['maxEventsPerStream', 'maxStreamsPerSession', 'maxBytesPerSession'] as const) {
      const value = limits[name]
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${String(value)}`)
    }
    this.limits = Object.freeze({ ...limits })
  }

  append (sessionId: string, streamId: string, id: string, message: unknown): void {
    if (this.closed) return
    const parsed = parseEventId(id)
    if (parsed === undefined || parsed.streamId !== streamId) throw new TypeError(`event id ${JSON.stringify(id)} is not an id of stream ${JSON.stringify(streamId)}`)
    const json: unknown = keptJson(message) ?? JSON.stringify(message)
    if (typeof json !== 'string') throw new TypeError('event message is not JSON-serialisable')

    let session = this.sessions.get(sessionId)
    if (session === undefined) {
      session = { streams: new Map(), lastStreamId: undefined, order: [], orderHead: 0, stale: 0, bytes: 0 }
      this.sessions.set(sessionId, session)
    }
    let stream = session.streams.get(streamId)
    if (stream === undefined) {
      if (session.streams.size >= this.limits.maxStreamsPerSession) this.evictLeastRecentStream(session)
      stream = { events: [], head: 0, lastSeq: -1, evictedThroughSeq: -1 }
      session.streams.set(streamId, stream)
    } else {
      if (parsed.seq <= stream.lastSeq) throw new RangeError(`event seq ${parsed.seq} does not follow ${stream.lastSeq} on stream ${JSON.stringify(streamId)}`)
      if (session.lastStreamId !== streamId) {
        session.streams.delete(streamId)
        session.streams.set(streamId, stream)
      }
    }
    session.lastStreamId = streamId

    const node: EventNode = { seq: parsed.seq, id, json, bytes: Buffer.byteLength(json), stream, evicted: false }
    stream.events.push(node)
    stream.lastSeq = node.seq
    session.order.push(node)
    session.bytes += node.bytes

    if (stream.events.length - stream.head > this.limits.maxEventsPerStream) {
      this.evictStreamHead(session, stream)
      session.stale++
    }
    while (session.bytes > this.limits.maxBytesPerSession && this.evictOldest(session));
    compactOrder(session)
  }

  async replayAfter (sessionId: string, streamId: string, afterId: string): Promise<StoredEvent[] | undefined> {
    if (this.closed) return undefined
    const parsed = parseEventId(afterId)
    if (parsed === undefined || parsed.streamId !== streamId) return undefined
    const stream = this.sessions.get(sessionId)?.streams.get(streamId)
    if (stream === undefined) return undefined
    let start: number
    if (parsed.seq === stream.evictedThroughSeq) {
      start = stream.head
    } else {
      const at = findSeq(stream, parsed.seq)
      if (at === -1) return undefined
      start = at + 1
    }
    const replay: StoredEvent[] = []
    for (let i = start; i < stream.events.length; i++) {
      const node = stream.events[i] as EventNode
      replay.push({ id: node.id, message: storedMessage(node.json) })
    }
    return replay
  }

  dropSession (sessionId: string): void {
    this.sessions.delete(sessionId)
  }

  async close (): Promise<void> {
    this.closed = true
    this.sessions.clear()
  }

  private evictLeastRecentStream (session: SessionLog): void {
    const [streamId, stream] = session.streams.entries().next().value ?? []
    if (streamId === undefined || stream === undefined) return
    for (let i = stream.head; i < stream.events.length; i++) {
      const node = stream.events[i] as EventNode
      node.evicted = true
      node.json = ''
      session.bytes -= node.bytes
      session.stale++
    }
    session.streams.delete(streamId)
    if (session.lastStreamId === streamId) session.lastStreamId = undefined
  }

  /** Evicts the session's oldest live event, which is also the oldest of its own stream. */
  private evictOldest (session: SessionLog): boolean {
    while (session.orderHead < session.order.length) {
      const node = session.order[session.orderHead++] as EventNode
      if (node.evicted) {
        session.stale--
        continue
      }
      this.evictStreamHead(session, node.stream)
      return true
    }
    return false
  }

  private evictStreamHead (session: SessionLog, stream: StreamLog): void {
    const node = stream.events[stream.head++] as EventNode
    node.evicted = true
    node.json = ''
    session.bytes -= node.bytes
    stream.evictedThroughSeq = node.seq
    if (stream.head >= COMPACT_MIN && stream.head * 2 >= stream.events.length) {
      stream.events = stream.events.slice(stream.head)
      stream.head = 0
    }
  }
}

function compactOrder (session: SessionLog): void {
  const dead = session.orderHead + session.stale
  if (dead < COMPACT_MIN || dead * 2 < session.order.length) return
  session.order = session.order.slice(session.orderHead).filter(node => !node.evicted)
  session.orderHead = 0
  session.stale = 0
}

/** Index of the live event with that seq, or -1. */
function findSeq (stream: StreamLog, seq: number): number {
  let low = stream.head
  let high = stream.events.length - 1
  while (low <= high) {
    const mid = (low + high) >>> 1
    const midSeq = (stream.events[mid] as EventNode).seq
    if (midSeq === seq) return mid
    if (midSeq < seq) low = mid + 1
    else high = mid - 1
  }
  return -1
}
