import type { Redis } from 'ioredis'
import { type RedisConnection, closeRedisClient, createRedisClient, isClusterConnection, safeRedisError } from '../net/redis-client.ts'
import { type EventStore, type StoredEvent, formatEventId, parseEventId } from './event-store.ts'
import { RedisStandaloneStreams } from './redis-standalone-streams.ts'
import { keptJson, storedMessage } from '../protocol/wire.ts'

// Events of resumable SSE streams in Redis, so that Last-Event-ID works on any replica, also after
// the one that wrote the stream died.
//
// Each entry also names the seq this replica appended before it on that stream (field `p`). A
// replay is then exact without relying on where Redis trimmed or on seqs being contiguous: it
// returns events only when the chain from the client's id to the newest entry is unbroken, which
// also catches an append lost to a Redis outage in the middle of the stream.

export interface RedisEventStoreSettings {
  /** Prepended to every key (see eventStoreKey). */
  keyPrefix: string
  /** Refreshed on every append to the stream and to the session's stream set (the gateway uses http.sessionIdleMs). */
  ttlMs: number
  /** Newest events kept per stream, at least (trimmed with MAXLEN ~). */
  maxEventsPerStream: number
  /** Streams kept per session; the one appended to least recently is deleted first. */
  maxStreamsPerSession: number
  /** Bound of a replay (waiting for this replica's own writes of the stream included) and of close's flush. */
  commandTimeoutMs: number
  /** A Redis command failed; err carries only type, message and code. */
  onError?: (op: RedisEventStoreOp, err: RedisErrorSummary) => void
  /**
   * This replica's tag in the session store: with it, a standalone stream whose replica died is
   * appended to by the others (see RedisStandaloneStreams).
   */
  replica?: string
}

export type RedisEventStoreOp = 'append' | 'replay' | 'dropSession' | 'standalone'
export type RedisErrorSummary = ReturnType<typeof safeRedisError>

/** With url the store creates its client and closes it; a given client stays the caller's. */
export type RedisEventStoreOptions = RedisEventStoreSettings & ({ url: string, connection?: undefined, client?: undefined } | { connection: RedisConnection, url?: undefined, client?: undefined } | { client: Redis, url?: undefined, connection?: undefined })

/**
 * The key layout: `<keyPrefix>:events:{<sessionId>}` is a sorted set of the session's stream ids
 * (score: order of last append), `<keyPrefix>:events:{<sessionId>}:<streamId>` the Redis Stream of
 * one downstream stream (entry id `0-<seq+1>`, fields `m` = JSON message, `p` = previous seq or -1).
 * Session ids may not contain ':', so the two kinds of key never collide. The braces are a Cluster
 * hash tag: a session's set and streams share one slot, so the scripts that touch them together
 * never cross slots.
 */
export function eventStoreKey (keyPrefix: string, sessionId: string, streamId?: string): string {
  if (sessionId.length === 0 || /[:{}]/.test(sessionId)) throw new TypeError(`session id ${JSON.stringify(sessionId)} cannot name event keys`)
  const sessionKey = `${keyPrefix}:events:{${sessionId}}`
  return streamId === undefined ? sessionKey : `${sessionKey}:${streamId}`
}

// KEYS: stream, session set. ARGV: entry id, json, previous seq, maxlen, ttl ms, stream id,
// max streams, stream key prefix. Atomic, so no other replica sees a session over its stream cap
// or deletes a stream between its append and its score update. The score is a counter, not TIME:
// a clock stepping back must not make the stream just appended to look the oldest.
const APPEND_LUA = `
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], ARGV[1], 'm', ARGV[2], 'p', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local score = 1
if top[2] then score = tonumber(top[2]) + 1 end
redis.call('ZADD', KEYS[2], score, ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[7])
if excess > 0 then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, excess - 1)
  for _, id in ipairs(oldest) do redis.call('DEL', ARGV[8] .. id) end
  redis.call('ZREM', KEYS[2], unpack(oldest))
end
return 1
`

// KEYS: session set. ARGV: stream key prefix.
const DROP_LUA = `
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
for _, id in ipairs(ids) do redis.call('DEL', ARGV[1] .. id) end
redis.call('DEL', KEYS[1])
return #ids
`

interface EventScripts {
  switchboardEventAppend: (streamKey: string, sessionKey: string, entryId: string, json: string, prev: string,
    maxLen: number, ttlMs: number, streamId: string, maxStreams: number, streamKeyPrefix: string) => Promise<unknown>
  switchboardEventDrop: (sessionKey: string, streamKeyPrefix: string) => Promise<unknown>
}

const CONNECTION_NAME = 'switchboard-events'

export class RedisEventStore implements EventStore {
  private readonly client: Redis & EventScripts
  private readonly ownsClient: boolean
  private readonly settings: Readonly<RedisEventStoreSettings>
  // Per session, per stream: the newest seq this replica appended there, capped like Redis's set.
  private readonly lastSeqs = new Map<string, Map<string, number>>()
  // This replica's unsettled writes by key (stream key for appends, session key for drops).
  private readonly pending = new Map<string, Set<Promise<void>>>()
  private closing?: Promise<void>
  private readonly ordered: boolean
  readonly standalone?: RedisStandaloneStreams

  constructor (options: RedisEventStoreOptions) {
    for (const name of ['ttlMs', 'maxEventsPerStream', 'maxStreamsPerSession', 'commandTimeoutMs'] as const) {
      const value = options[name]
      if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${String(value)}`)
    }
    const { url, connection, client, ...settings } = options
    this.settings = Object.freeze(settings)
    const redis = client ?? createRedisClient({ url, connection, commandTimeoutMs: options.commandTimeoutMs, connectionName: CONNECTION_NAME })
    this.ownsClient = client === undefined
    this.ordered = connection !== undefined && isClusterConnection(connection)
    // Scripts run as EVAL on a connection's first use and EVALSHA after, in command order.
    if (!('switchboardEventAppend' in redis)) redis.defineCommand('switchboardEventAppend', { lua: APPEND_LUA, numberOfKeys: 2 })
    if (!('switchboardEventDrop' in redis)) redis.defineCommand('switchboardEventDrop', { lua: DROP_LUA, numberOfKeys: 1 })
    this.client = redis as Redis & EventScripts
    if (settings.replica !== undefined) {
      const { keyPrefix } = settings
      this.standalone = new RedisStandaloneStreams(redis, {
        keyPrefix,
        replica: settings.replica,
        ttlMs: settings.ttlMs,
        maxEventsPerStream: settings.maxEventsPerStream,
        sessionKey: (sessionId) => eventStoreKey(keyPrefix, sessionId),
        sharded: connection !== undefined && isClusterConnection(connection),
        onError: (err) => { this.report('standalone', err) }
      })
    }
  }

  append (sessionId: string, streamId: string, id: string, message: unknown): void {
    if (this.closing !== undefined) return
    const parsed = parseEventId(id)
    if (parsed === undefined || parsed.streamId !== streamId) throw new TypeError(`event id ${JSON.stringify(id)} is not an id of stream ${JSON.stringify(streamId)}`)
    const json: unknown = keptJson(message) ?? JSON.stringify(message)
    if (typeof json !== 'string') throw new TypeError('event message is not JSON-serialisable')
    const sessionKey = eventStoreKey(this.settings.keyPrefix, sessionId)
    const streamKey = eventStoreKey(this.settings.keyPrefix, sessionId, streamId)

    let streams = this.lastSeqs.get(sessionId)
    const prev = streams?.get(streamId)
    if (prev !== undefined && parsed.seq <= prev) throw new RangeError(`event seq ${parsed.seq} does not follow ${prev} on stream ${JSON.stringify(streamId)}`)
    if (streams === undefined) this.lastSeqs.set(sessionId, streams = new Map())
    // Recorded before the write succeeds: if it fails, the next entry names a seq Redis lacks and
    // replays across the gap are refused instead of silently skipping it.
    streams.delete(streamId)
    streams.set(streamId, parsed.seq)
    if (streams.size > this.settings.maxStreamsPerSession) streams.delete(streams.keys().next().value as string)

    this.track(streamKey, 'append', () => this.client.switchboardEventAppend(
      streamKey, sessionKey, entryIdOf(parsed.seq), json, String(prev ?? -1), this.settings.maxEventsPerStream,
      this.settings.ttlMs, streamId, this.settings.maxStreamsPerSession, `${sessionKey}:`))
    this.standalone?.appended(sessionId, streamId)
  }

  async replayAfter (sessionId: string, streamId: string, afterId: string): Promise<StoredEvent[] | undefined> {
    if (this.closing !== undefined) return undefined
    const parsed = parseEventId(afterId)
    if (parsed === undefined || parsed.streamId !== streamId || sessionId.length === 0 || sessionId.includes(':')) return undefined
    const streamKey = eventStoreKey(this.settings.keyPrefix, sessionId, streamId)
    const writes = [...this.pending.get(streamKey) ?? []]
    // Inclusive start: the entry of afterId itself, when still there, proves the id was issued.
    const read = Promise.all(writes).then(async () => await this.client.xrange(streamKey, entryIdOf(parsed.seq), '+'))
    const outcome = await within(read, this.settings.commandTimeoutMs)
    if (!outcome.ok) {
      this.report('replay', outcome.timedOut ? new Error(`replay took over ${this.settings.commandTimeoutMs} ms`) : outcome.err)
      return undefined
    }
    return chainAfter(streamId, parsed.seq, outcome.value)
  }

  dropSession (sessionId: string): void {
    this.lastSeqs.delete(sessionId)
    this.standalone?.forget(sessionId)
    if (this.closing !== undefined || sessionId.length === 0 || sessionId.includes(':')) return
    const sessionKey = eventStoreKey(this.settings.keyPrefix, sessionId)
    this.track(sessionKey, 'dropSession', () => this.client.switchboardEventDrop(sessionKey, `${sessionKey}:`))
  }

  /** Waits (bounded) for this replica's writes, then closes the client if the store created it. */
  async close (): Promise<void> {
    this.closing ??= (async () => {
      const writes = [...this.pending.values()].flatMap(set => [...set])
      await within(Promise.all(writes), this.settings.commandTimeoutMs)
      this.lastSeqs.clear()
      if (this.ownsClient) await closeRedisClient(this.client)
    })()
    await this.closing
  }

  private track (key: string, op: RedisEventStoreOp, write: () => Promise<unknown>): void {
    let done: Promise<void>
    // A Cluster client may send a stream's scripts out of order (a MOVED redirect, EVALSHA resent as
    // EVAL after NOSCRIPT): there, a write waits for the earlier ones of its key, so entry ids rise.
    const before = this.ordered ? [...this.pending.get(key) ?? []] : []
    try {
      done = (before.length === 0 ? write() : Promise.all(before).then(write)).then(() => {}, (err: unknown) => { this.report(op, err) })
    } catch (err: unknown) {
      this.report(op, err)
      return
    }
    let set = this.pending.get(key)
    if (set === undefined) this.pending.set(key, set = new Set())
    const writes = set
    writes.add(done)
    void done.then(() => {
      writes.delete(done)
      if (writes.size === 0 && this.pending.get(key) === writes) this.pending.delete(key)
    })
  }

  private report (op: RedisEventStoreOp, err: unknown): void {
    try {
      this.settings.onError?.(op, safeRedisError(err))
    } catch {
      // A failing metrics or log callback must not break the write path either.
    }
  }
}

// Stream entry ids must be above 0-0, hence seq + 1; BigInt keeps MAX_SAFE_INTEGER + 1 exact.
function entryIdOf (seq: number): string {
  return `0-${BigInt(seq) + 1n}`
}

interface Entry { seq: number, prev: number, json: string }

function decodeEntry ([entryId, fields]: [string, string[]]): Entry | undefined {
  const match = /^0-([1-9][0-9]*)$/.exec(entryId)
  if (match?.[1] === undefined) return undefined
  const seq = Number(BigInt(match[1]) - 1n)
  let prev: number | undefined
  let json: string | undefined
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'm') json = fields[i + 1]
    else if (fields[i] === 'p') prev = Number(fields[i + 1])
  }
  if (json === undefined || prev === undefined || !Number.isSafeInteger(prev) || !Number.isSafeInteger(seq)) return undefined
  return { seq, prev, json }
}

/**
 * The events after afterSeq from entries read from afterSeq on, or undefined unless every one of
 * them is there: each entry must name the one before it as its predecessor, the first one afterSeq.
 */
function chainAfter (streamId: string, afterSeq: number, raw: Array<[string, string[]]>): StoredEvent[] | undefined {
  const entries = raw.map(decodeEntry)
  // Empty: no such stream, or afterSeq is beyond its newest event (never issued).
  if (entries.length === 0) return undefined
  let expected = afterSeq
  const replay: StoredEvent[] = []
  try {
    for (const [i, entry] of entries.entries()) {
      if (entry === undefined) return undefined
      if (i === 0 && entry.seq === afterSeq) continue
      if (entry.prev !== expected) return undefined
      replay.push({ id: formatEventId(streamId, entry.seq), message: storedMessage(entry.json) })
      expected = entry.seq
    }
  } catch {
    return undefined
  }
  return replay
}

type Outcome<T> = { ok: true, value: T } | { ok: false, timedOut: true } | { ok: false, timedOut: false, err: unknown }

async function within<T> (promise: Promise<T>, ms: number): Promise<Outcome<T>> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<Outcome<T>>(resolve => { timer = setTimeout(() => { resolve({ ok: false, timedOut: true }) }, ms) })
  try {
    return await Promise.race([
      promise.then((value): Outcome<T> => ({ ok: true, value }), (err: unknown): Outcome<T> => ({ ok: false, timedOut: false, err })),
      timeout
    ])
  } finally {
    clearTimeout(timer)
  }
}
