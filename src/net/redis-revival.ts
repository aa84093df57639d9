import type { Redis } from 'ioredis'
import { redactUrl } from './url-redaction.ts'

// ioredis can end a client for good while the gateway still needs it: a Sentinel's +switch-master
// that arrives while the client is asking the sentinels for the primary moves it from connecting
// to end, and nothing reconnects it (ioredis issue 1683). Such a replica would answer "store cannot
// be read" for as long as it runs. Every client the gateway makes is watched here: an end the
// gateway did not ask for is followed by connect() again, with backoff, until it is ready; each
// revival is reported once (a log line at error, wired in app.ts).

export interface RedisRevival { redis: string, connection: string, attempt: number }

type Listener = (event: RedisRevival) => void

const listeners = new Set<Listener>()
/** Clients the gateway closes on purpose: their end is final. */
const closing = new WeakSet<Redis>()
const FIRST_DELAY_MS = 100
const MAX_DELAY_MS = 2_000

/** Reports each unasked end (and the attempt it starts); returns the unsubscribe. */
export function onRedisRevival (listener: Listener): () => void {
  listeners.add(listener)
  return () => { listeners.delete(listener) }
}

/** The gateway is closing `client`: its end is not to be undone. */
export function markClosing (client: Redis): void {
  closing.add(client)
}

/** Brings `client` back whenever it ends without markClosing: connect() again, 100 ms to 2 s apart. */
export function reviveOnEnd (client: Redis, url: string, connection: string): void {
  let attempt = 0
  let timer: NodeJS.Timeout | undefined
  const revive = (): void => {
    timer = undefined
    if (closing.has(client) || client.status !== 'end') return
    attempt++
    for (const listener of listeners) {
      try { listener({ redis: redactUrl(url), connection, attempt }) } catch {}
    }
    // A refused connect() ends the client again, and the 'end' below schedules the next attempt.
    client.connect().catch(() => {})
  }
  client.on('end', () => {
    if (closing.has(client) || timer !== undefined) return
    timer = setTimeout(revive, Math.min(FIRST_DELAY_MS * 2 ** attempt, MAX_DELAY_MS))
    timer.unref()
  })
  client.on('ready', () => { attempt = 0 })
}
