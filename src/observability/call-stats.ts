import type { CallEvent, CallFeed } from './call-feed.ts'
import type { AdminCallStats, CallMinute } from '../ops/console-views.ts'

/** How many one-minute buckets each upstream keeps. */
export const STATS_WINDOW_MINUTES = 15
/** Upstreams beyond this many are not counted (a reload that renames upstreams over and over must not grow memory). */
export const DEFAULT_MAX_UPSTREAMS = 1000
const MINUTE_MS = 60_000
/** Upper bounds of the latency buckets, in ms; one more bucket takes everything slower. */
export const LATENCY_BOUNDS_MS: readonly number[] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000]

interface Minute {
  /** The minute's index since the epoch; -1: never used. */
  index: number
  calls: number
  errors: number
  maxMs: number
  readonly buckets: Uint32Array
}

function emptyMinute (): Minute {
  return { index: -1, calls: 0, errors: 0, maxMs: 0, buckets: new Uint32Array(LATENCY_BOUNDS_MS.length + 1) }
}

function bucketOf (durationMs: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (durationMs <= (LATENCY_BOUNDS_MS[i] as number)) return i
  return LATENCY_BOUNDS_MS.length
}

/**
 * The 95th percentile from the buckets: the upper bound of the bucket the 95th call falls in, never
 * above the slowest call seen (so one 3 ms call reads 3, not 5, and the open last bucket has a value).
 */
function p95Of (minute: Minute): number | null {
  if (minute.calls === 0) return null
  const rank = Math.ceil(minute.calls * 0.95)
  let seen = 0
  for (let i = 0; i < minute.buckets.length; i++) {
    seen += minute.buckets[i] as number
    if (seen >= rank) return Math.min(LATENCY_BOUNDS_MS[i] ?? minute.maxMs, minute.maxMs)
  }
  return minute.maxMs
}

export interface CallStatsOptions {
  /** Milliseconds since the epoch; Date.now by default (tests give their own). */
  clock?: () => number
  maxUpstreams?: number
  /** Upstreams shown even before their first call (the configured ones), with zero minutes. */
  known?: () => readonly string[]
}

/**
 * Calls per minute, errors and p95 latency per upstream over the last STATS_WINDOW_MINUTES, in a
 * fixed ring of minutes per upstream: memory is bounded by the upstream cap, whatever the call rate.
 * A slot is reused when its minute comes round again; minutes nobody called in read as zero.
 */
export class CallStats {
  readonly #rings = new Map<string, Minute[]>()
  readonly #clock: () => number
  readonly #maxUpstreams: number
  readonly #known: () => readonly string[]

  constructor (options: CallStatsOptions = {}) {
    this.#clock = options.clock ?? Date.now
    this.#maxUpstreams = options.maxUpstreams ?? DEFAULT_MAX_UPSTREAMS
    this.#known = options.known ?? (() => [])
  }

  /** Subscribes to the feed; the function returned stops listening. */
  follow (feed: CallFeed): () => void {
    return feed.subscribe((event) => { this.record(event) })
  }

  /** One finished call. Calls that reached no upstream (unknown tool, denied) belong to none. */
  record (event: Pick<CallEvent, 'upstream' | 'outcome' | 'durationMs'>): void {
    if (event.upstream === '') return
    let ring = this.#rings.get(event.upstream)
    if (ring === undefined) {
      if (this.#rings.size >= this.#maxUpstreams) return
      ring = Array.from({ length: STATS_WINDOW_MINUTES }, emptyMinute)
      this.#rings.set(event.upstream, ring)
    }
    const index = Math.floor(this.#clock() / MINUTE_MS)
    const minute = ring[index % STATS_WINDOW_MINUTES] as Minute
    if (minute.index !== index) {
      minute.index = index
      minute.calls = 0
      minute.errors = 0
      minute.maxMs = 0
      minute.buckets.fill(0)
    }
    const durationMs = Math.max(0, event.durationMs)
    minute.calls++
    if (event.outcome !== 'ok') minute.errors++
    minute.maxMs = Math.max(minute.maxMs, durationMs)
    const bucket = bucketOf(durationMs)
    minute.buckets[bucket] = (minute.buckets[bucket] as number) + 1
  }

  /** How many upstreams it counts for. */
  get size (): number { return this.#rings.size }

  /** The last STATS_WINDOW_MINUTES minutes per upstream, oldest first, the current minute last. */
  snapshot (): AdminCallStats {
    const now = Math.floor(this.#clock() / MINUTE_MS)
    const names = [...new Set([...this.#known(), ...this.#rings.keys()])].sort()
    return {
      windowMinutes: STATS_WINDOW_MINUTES,
      upstreams: names.map(upstream => ({ upstream, minutes: this.#minutes(this.#rings.get(upstream), now) }))
    }
  }

  #minutes (ring: Minute[] | undefined, now: number): CallMinute[] {
    const out: CallMinute[] = []
    for (let index = now - STATS_WINDOW_MINUTES + 1; index <= now; index++) {
      const minute = ring?.[index % STATS_WINDOW_MINUTES]
      const at = index * MINUTE_MS
      if (minute === undefined || minute.index !== index) out.push({ at, calls: 0, errors: 0, p95Ms: null })
      else out.push({ at, calls: minute.calls, errors: minute.errors, p95Ms: p95Of(minute) })
    }
    return out
  }
}
