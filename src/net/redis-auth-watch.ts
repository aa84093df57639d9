import type { Redis } from 'ioredis'
import { redactUrl } from './url-redaction.ts'

// A wrong or missing Redis password is a configuration fault no retry will fix, yet ioredis reports
// it only as an 'error' event per reconnect (every ~second), and the operations that fail meanwhile
// say "Stream isn't writeable". This turns those events into one outage per Redis URL, across all
// the gateway's connections to it: one report when it starts, one when Redis accepts the
// credentials again; a later failure is a new outage.

export type RedisAuthOutage =
  | { kind: 'failed', redis: string, connection: string, error: { type: string, message: string } }
  | { kind: 'recovered', redis: string, outageMs: number }

type Listener = (event: RedisAuthOutage) => void

const listeners = new Set<Listener>()
/** By URL: the connections refused right now, and since when. */
const outages = new Map<string, { since: number, clients: Set<Redis>, first: Extract<RedisAuthOutage, { kind: 'failed' }> }>()

/** WRONGPASS (wrong password or user), NOAUTH (none sent), and the text of Redis before 6. */
export function isRedisAuthFailure (err: unknown): boolean {
  if (!(err instanceof Error)) return false
  return /^(WRONGPASS|NOAUTH)\b/.test(err.message) || /^ERR invalid (username-)?password/i.test(err.message)
}

/** Reports each outage's start and end to `listener` (an outage already under way at once); returns the unsubscribe. */
export function onRedisAuthOutage (listener: Listener): () => void {
  listeners.add(listener)
  for (const outage of outages.values()) listener(outage.first)
  return () => { listeners.delete(listener) }
}

function emit (event: RedisAuthOutage): void {
  for (const listener of listeners) {
    try { listener(event) } catch {}
  }
}

/** Follows one client's authentication: refused on an auth error, settled on 'ready', forgotten on 'end'. */
export function watchRedisAuth (client: Redis, url: string, connection: string): void {
  client.on('error', (err: unknown) => {
    if (!isRedisAuthFailure(err)) return
    const outage = outages.get(url)
    if (outage !== undefined) {
      outage.clients.add(client)
      return
    }
    // The message is Redis's own ("WRONGPASS invalid username-password pair…"): it never quotes the password.
    const first = { kind: 'failed' as const, redis: redactUrl(url), connection, error: { type: (err as Error).name, message: (err as Error).message } }
    outages.set(url, { since: Date.now(), clients: new Set([client]), first })
    emit(first)
  })
  const settle = (recovered: boolean): void => {
    const outage = outages.get(url)
    if (outage === undefined || !outage.clients.delete(client) || outage.clients.size > 0) return
    outages.delete(url)
    // A client closed mid-outage (the gateway stopping) ends nothing worth a line.
    if (recovered) emit({ kind: 'recovered', redis: redactUrl(url), outageMs: Date.now() - outage.since })
  }
  client.on('ready', () => { settle(true) })
  client.on('end', () => { settle(false) })
}
