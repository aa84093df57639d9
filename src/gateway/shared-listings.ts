import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import type { Identity } from '../credentials/create-identity.ts'
import { listsThroughUsers } from '../credentials/lists-through-users.ts'
import { isRecord } from '../protocol/json-rpc.ts'
import type { SessionMessage, SessionStore } from '../session/session-store.ts'
import type { UpstreamLists } from '../upstream/upstream-lists.ts'

export type ListingMessage = Extract<SessionMessage, { kind: 'listing' }>
export type ListingOutcome = 'published' | 'delivered' | 'ignored'

/**
 * The catalog of a per-user upstream (one that lists through its users, see lists-through-users.ts)
 * is what a user's connection last listed. One replica learns it; every replica serves it: the
 * listing is kept in the token vault and announced to the others, which read it from there.
 */
export interface SharedListings {
  /** A user's connection here listed `upstream` (the catalog has these lists already). */
  learned: (upstream: string, lists: UpstreamLists) => void
  /** At start: the remembered listings of the per-user upstreams nobody here has listed yet. */
  restore: () => Promise<void>
  close: () => void
}

/**
 * The channel between replicas: the session store's pub/sub when sessions are shared. One process
 * has none: nothing is published and nothing arrives.
 */
export interface ListingBus {
  readonly shared: boolean
  publish: (message: ListingMessage) => void
  /** Every message of kind `listing` another replica sent, unchecked. */
  onMessage: (listener: (message: unknown) => void) => void
}

export const NO_BUS: ListingBus = { shared: false, publish () {}, onMessage () {} }

export function listingBusOf (store: SessionStore): ListingBus {
  if (!store.shared) return NO_BUS
  return {
    shared: true,
    publish: (message) => { store.publish(message) },
    onMessage: (listener) => { store.onMessage((message) => { if (message.kind === 'listing') listener(message) }) }
  }
}

// A version is a digest (base64url); an upstream's name is config (schema: a short identifier).
const VERSION = /^[\w-]{1,64}$/
const MAX_UPSTREAM_NAME = 256
const MALFORMED_SAMPLE_CHARS = 200

/** The announcement as sent, or undefined when it is not one (another version of the gateway, or garbage). */
export function parseListingMessage (message: unknown): ListingMessage | undefined {
  if (!isRecord(message) || message.kind !== 'listing') return undefined
  const { upstream, version } = message
  if (typeof upstream !== 'string' || upstream === '' || upstream.length > MAX_UPSTREAM_NAME) return undefined
  if (typeof version !== 'string' || !VERSION.test(version)) return undefined
  return { kind: 'listing', upstream, version }
}

export interface SharedListingsDeps {
  bus: ListingBus
  /** Where listings are kept: the token vault's records. */
  store: Pick<Identity, 'rememberListing' | 'rememberedListing' | 'rememberedListings' | 'listingsShared'>
  config: () => GatewayConfig
  /** Whether the catalog knows any lists of `upstream`. */
  has: (upstream: string) => boolean
  /** Puts lists in the catalog as the upstream's own connection would (its sessions hear list_changed). */
  apply: (upstream: string, lists: UpstreamLists) => void
  log: Logger
  /** Each announcement sent or heard, for switchboard_cross_replica_messages_total{kind="listing"}. */
  onMessage?: (outcome: ListingOutcome) => void
}

export function createSharedListings (deps: SharedListingsDeps): SharedListings {
  const { store, log } = deps
  const perUser = (upstream: string): boolean => deps.config().upstreams.some(u => u.name === upstream && listsThroughUsers(u))
  // A record sealed under a key made at start, or kept in one process, no other replica can read.
  const bus = deps.bus.shared && store.listingsShared ? deps.bus : NO_BUS
  if (deps.bus.shared && !store.listingsShared && deps.config().upstreams.some(listsThroughUsers)) {
    log.warn('per-user upstreams\' catalogs do not cross replicas: the token vault is not shared (it is in Redis with tokens.encryptionKey set); each replica learns them from its own users')
  }
  /** The version of each upstream's listing the catalog holds from the store (kept or read here). */
  const known = new Map<string, string>()
  /** How many listings each upstream's users' connections taught this replica: a read older than the last is not applied. */
  const taught = new Map<string, number>()
  // One upstream's writes and reads run one after the other, so a read sees this replica's own last write.
  const queues = new Map<string, Promise<void>>()
  let warnedMalformed = false
  let closed = false

  const serially = (upstream: string, task: () => Promise<void>): void => {
    const next = (queues.get(upstream) ?? Promise.resolve()).then(task).catch((err: unknown) => {
      log.warn({ err, upstream }, 'sharing the listing of a per-user upstream failed')
    })
    queues.set(upstream, next)
    void next.then(() => { if (queues.get(upstream) === next) queues.delete(upstream) })
  }

  const outcome = (result: ListingOutcome, fields: Record<string, unknown>, why: string): void => {
    deps.onMessage?.(result)
    log.debug(fields, why)
  }

  const received = (message: unknown): void => {
    const listing = parseListingMessage(message)
    if (listing === undefined) {
      if (!warnedMalformed) log.warn({ sample: JSON.stringify(message)?.slice(0, MALFORMED_SAMPLE_CHARS) }, 'malformed listing announcement from another replica dropped (further ones are dropped silently)')
      warnedMalformed = true
      deps.onMessage?.('ignored')
      return
    }
    const { upstream, version } = listing
    if (closed || !perUser(upstream)) {
      outcome('ignored', { upstream, version }, 'listing announced for an upstream that does not list through its users here')
      return
    }
    // Held already, unless a reload took the upstream out of the catalog since.
    const holds = (): boolean => known.get(upstream) === version && deps.has(upstream)
    if (holds()) {
      outcome('ignored', { upstream, version }, 'listing announced that this replica holds already')
      return
    }
    const generation = taught.get(upstream) ?? 0
    serially(upstream, async () => {
      let found
      try {
        found = holds() ? undefined : await store.rememberedListing(upstream)
      } catch (err: unknown) {
        if (closed) return
        log.warn({ err, upstream, version }, 'could not read the listing another replica announced; this replica keeps the one it has')
        deps.onMessage?.('ignored')
        return
      }
      if ((taught.get(upstream) ?? 0) !== generation) {
        // A user here listed it since: that listing is newer and is kept next, and announced even if
        // this replica held it before (the others may hold the one announced here).
        known.delete(upstream)
        outcome('ignored', { upstream, version }, 'listing announcement superseded by a listing here')
        return
      }
      if (found === undefined || closed || !perUser(upstream)) {
        outcome('ignored', { upstream, version }, 'listing announced that is held already, gone, or no longer wanted here')
        return
      }
      known.set(upstream, found.version)
      deps.apply(upstream, found.lists)
      outcome('delivered', { upstream, version: found.version, tools: found.lists.tools.length }, 'listing of a per-user upstream taken from another replica')
    })
  }
  bus.onMessage(received)

  return {
    learned (upstream, lists) {
      if (closed) return
      taught.set(upstream, (taught.get(upstream) ?? 0) + 1)
      serially(upstream, async () => {
        const version = await store.rememberListing(upstream, lists)
        // Unchanged: every replica holds it already (or reads it at start).
        if (version === undefined || known.get(upstream) === version || closed) return
        known.set(upstream, version)
        if (!bus.shared) return
        bus.publish({ kind: 'listing', upstream, version })
        outcome('published', { upstream, version, tools: lists.tools.length }, 'listing of a per-user upstream announced to the other replicas')
      })
    },
    async restore () {
      const found = await store.rememberedListings()
      for (const { upstream, lists, version } of found) {
        serially(upstream, async () => {
          if (closed || deps.has(upstream)) return
          known.set(upstream, version)
          deps.apply(upstream, lists)
        })
      }
    },
    close () { closed = true }
  }
}
