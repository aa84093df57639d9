import type * as Undici from 'undici'
import type { Pool } from 'undici'
import { lazyRequire } from '../net/lazy-require.ts'

// Loaded with the first HTTP upstream: a gateway of stdio upstreams does not carry it.
const undici = lazyRequire<typeof Undici>('undici')

interface Held { pool: Pool, users: number }

/**
 * One keep-alive socket pool per upstream origin, shared by every transport to that origin (two
 * upstreams on one host, the connections of many sessions or users to one upstream): the
 * credentials go in each request's headers, not in the pool. A pool is made on first use and
 * destroyed when its last transport releases it.
 */
export class OriginDispatchers {
  readonly #pools = new Map<string, Held>()

  /** The origin's pool, held until `release` is called once for this call. */
  acquire (origin: string): Pool {
    let held = this.#pools.get(origin)
    if (held === undefined) {
      // No undici timeouts: a request's own deadline (and the client's cancel) aborts it, and the
      // standalone GET stream may stay quiet for as long as the upstream has nothing to say. An idle
      // socket is kept for undici's default 4 s, under Node's server default of 5 s: kept longer, a
      // POST can be written on a socket the server is just closing, and a POST is not retried (the
      // answer to a sampling request would be lost).
      held = { pool: new (undici().Pool)(origin, { headersTimeout: 0, bodyTimeout: 0 }), users: 0 }
      this.#pools.set(origin, held)
    }
    held.users++
    return held.pool
  }

  /** Lets go of one `acquire`; the last one destroys the pool and its sockets. */
  async release (origin: string): Promise<void> {
    const held = this.#pools.get(origin)
    if (held === undefined || --held.users > 0) return
    this.#pools.delete(origin)
    await held.pool.destroy().catch(() => {})
  }

  /** The origin's pool while some transport holds it (for tests and status). */
  peek (origin: string): Pool | undefined {
    return this.#pools.get(origin)?.pool
  }

  /** How many origins have a pool now. */
  get size (): number {
    return this.#pools.size
  }
}

/** The process's one set of origin pools: every HTTP transport uses it unless given its own. */
export const originDispatchers = new OriginDispatchers()
