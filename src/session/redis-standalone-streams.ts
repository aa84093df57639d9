import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { StandaloneStreams, UnheldOutcome } from './event-store.ts'
import { sessionKeys } from './redis-session-store.ts'

// A session's standalone (GET) stream lives in the replica that carries it; its events are also
// in Redis, so the client can resume it anywhere. When that replica dies, nobody appends to the
// stream any more, and a session-wide notification raised meanwhile (list_changed) reached no
// one: a client that resumed with Last-Event-ID elsewhere never heard it. So each replica records
// which stream it carries (`<prefix>:standalone:{<sessionId>}` = `<replica> <streamId>`), and a
// replica that raises a notification for a session whose stream it does not carry appends it to
// that stream in Redis when the replica carrying it is gone.
//
// "Gone" is read from Redis itself: every replica subscribes to its own channel
// (`<prefix>:bus:<replica>`, see RedisSessionStore), and Redis drops the subscription the moment
// the replica's connection closes (a SIGKILL included). No heartbeat to wait for.
//
// Several replicas raise the same notification (each hears the same upstream): a once-key per
// (session, notification) lets the first one append it and turns the others into duplicates.

export interface RedisStandaloneStreamsSettings {
  keyPrefix: string
  /** This replica's tag: the one its session store subscribes under. */
  replica: string
  /** TTL of the record of who carries a stream (the session idle time). */
  ttlMs: number
  maxEventsPerStream: number
  /** The key of the session's set of streams; a stream's key is it, ':' and the stream id (RedisEventStore's layout). */
  sessionKey: (sessionId: string) => string
  /** A failed command; the caller counts it. */
  onError?: (err: unknown) => void
  /**
   * Redis Cluster: replicas listen on sharded channels, whose subscribers only the node owning the
   * channel's slot can count, never the node running a session's script. Liveness is then unknown:
   * a stream is left to its carrier (no takeover), rather than appended to behind a live carrier.
   */
  sharded?: boolean
}

/** How long a once-key keeps the other replicas from appending the same notification again. */
export const UNHELD_ONCE_TTL_MS = 30_000
// Replicas compute a notification within a debounce of each other; a seconds-long window is plenty.

// KEYS: carrier record, once-key, session stream set. ARGV: json, ttl ms, stream key prefix,
// maxlen, once ttl ms, replica channel prefix. The stream key comes from the carrier record, so it
// cannot be declared: standalone Redis only (as everything the gateway shares). Entries follow
// RedisEventStore's layout: id 0-<seq+1>, fields m (message) and p (previous seq).
const APPEND_UNHELD_LUA = `
local carrier = redis.call('GET', KEYS[1])
if not carrier then return 'no_stream' end
local space = string.find(carrier, ' ', 1, true)
if not space then return 'no_stream' end
local replica = string.sub(carrier, 1, space - 1)
local streamKey = ARGV[3] .. string.sub(carrier, space + 1)
local subscribers = redis.call('PUBSUB', 'NUMSUB', ARGV[6] .. replica)
if tonumber(subscribers[2]) > 0 then return 'held' end
local top = redis.call('XREVRANGE', streamKey, '+', '-', 'COUNT', 1)
if #top == 0 then return 'no_stream' end
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[5]) then return 'duplicate' end
local topSeq = tonumber(string.sub(top[1][1], 3)) - 1
local entryId = '0-' .. string.format('%d', topSeq + 2)
redis.call('XADD', streamKey, 'MAXLEN', '~', ARGV[4], entryId, 'm', ARGV[1], 'p', string.format('%d', topSeq))
redis.call('PEXPIRE', streamKey, ARGV[2])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 'stored'
`

interface UnheldScript {
  switchboardAppendUnheld: (carrierKey: string, onceKey: string, sessionKey: string, json: string, ttlMs: number,
    streamKeyPrefix: string, maxLen: number, onceTtlMs: number, channelPrefix: string) => Promise<unknown>
}

const OUTCOMES: readonly UnheldOutcome[] = ['stored', 'duplicate', 'held', 'no_stream']

export class RedisStandaloneStreams implements StandaloneStreams {
  private readonly client: Redis & UnheldScript
  private readonly settings: Readonly<RedisStandaloneStreamsSettings>
  /** Per session, the standalone stream this replica carries. */
  private readonly carried = new Map<string, string>()

  constructor (client: Redis, settings: RedisStandaloneStreamsSettings) {
    if (!('switchboardAppendUnheld' in client)) client.defineCommand('switchboardAppendUnheld', { lua: APPEND_UNHELD_LUA, numberOfKeys: 3 })
    this.client = client as Redis & UnheldScript
    this.settings = Object.freeze({ ...settings })
    // A Redis that came back empty lost who carries what: written again, unless another replica
    // took a stream over meanwhile (its record wins).
    client.on('ready', () => {
      for (const [sessionId, streamId] of this.carried) {
        this.client.set(this.carrierKey(sessionId), `${this.settings.replica} ${streamId}`, 'PX', this.settings.ttlMs, 'NX')
          .catch((err: unknown) => { this.settings.onError?.(err) })
      }
    })
  }

  carry (sessionId: string, streamId: string): void {
    if (!isKeySafe(sessionId)) return
    this.carried.set(sessionId, streamId)
    this.client.set(this.carrierKey(sessionId), `${this.settings.replica} ${streamId}`, 'PX', this.settings.ttlMs)
      .catch((err: unknown) => { this.settings.onError?.(err) })
  }

  /** An event was appended to one of this replica's streams: a carried one keeps its record alive. */
  appended (sessionId: string, streamId: string): void {
    if (this.carried.get(sessionId) !== streamId) return
    this.client.pexpire(this.carrierKey(sessionId), this.settings.ttlMs).catch((err: unknown) => { this.settings.onError?.(err) })
  }

  forget (sessionId: string): void {
    this.carried.delete(sessionId)
  }

  async appendUnheld (sessionId: string, once: string, message: unknown): Promise<UnheldOutcome> {
    if (!isKeySafe(sessionId)) return 'no_stream'
    if (this.settings.sharded === true) return 'held'
    const json = JSON.stringify(message)
    const sessionKey = this.settings.sessionKey(sessionId)
    const onceKey = `${this.settings.keyPrefix}:once:{${sessionId}}:${createHash('sha256').update(once).digest('base64url').slice(0, 22)}`
    try {
      const outcome = await this.client.switchboardAppendUnheld(this.carrierKey(sessionId), onceKey, sessionKey, json, this.settings.ttlMs,
        `${sessionKey}:`, this.settings.maxEventsPerStream, UNHELD_ONCE_TTL_MS, sessionKeys(this.settings.keyPrefix).replicaBus(''))
      return OUTCOMES.find(o => o === outcome) ?? 'failed'
    } catch (err: unknown) {
      this.settings.onError?.(err)
      return 'failed'
    }
  }

  async replicaAlive (replica: string): Promise<boolean | undefined> {
    if (this.settings.sharded === true) return undefined
    try {
      const reply = await this.client.pubsub('NUMSUB', sessionKeys(this.settings.keyPrefix).replicaBus(replica)) as unknown[]
      return Number(reply[1]) > 0
    } catch (err: unknown) {
      this.settings.onError?.(err)
      return undefined
    }
  }

  private carrierKey (sessionId: string): string {
    // The session's hash tag, like its stream keys: the append script touches them together.
    return `${this.settings.keyPrefix}:standalone:{${sessionId}}`
  }
}

function isKeySafe (sessionId: string): boolean {
  return sessionId.length > 0 && !/[:{}]/.test(sessionId)
}
