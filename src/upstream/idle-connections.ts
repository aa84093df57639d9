import type { UpstreamConnection } from './upstream-connection.ts'

interface Watched {
  readonly timer: NodeJS.Timeout
  /** When its last call ended (or it was opened), for choosing whom to close when the pool is full. */
  lastActive: number
}

/**
 * The principals' connections (isolation: principal), which outlive their sessions: each is closed
 * after `idleCloseMs` with no call in flight. One unref'd timer per connection, refreshed (not
 * re-made) when a call ends, so the call path allocates nothing for it.
 */
export class IdleConnections {
  readonly #watched = new Map<UpstreamConnection, Watched>()
  readonly #onIdle: (connection: UpstreamConnection) => void

  constructor (onIdle: (connection: UpstreamConnection) => void) {
    this.#onIdle = onIdle
  }

  watch (connection: UpstreamConnection, idleMs: number): void {
    const timer = setTimeout(() => { this.#expired(connection) }, idleMs)
    timer.unref()
    this.#watched.set(connection, { timer, lastActive: Date.now() })
  }

  /** One of its calls ended: its idle time starts again. */
  callEnded (connection: UpstreamConnection): void {
    const watched = this.#watched.get(connection)
    if (watched === undefined) return
    watched.lastActive = Date.now()
    watched.timer.refresh()
  }

  #expired (connection: UpstreamConnection): void {
    const watched = this.#watched.get(connection)
    if (watched === undefined) return
    // A call longer than the idle time: it is not idle; the timer starts again when the call ends.
    if (connection.activeCalls.size > 0) {
      watched.timer.refresh()
      return
    }
    this.forget(connection)
    this.#onIdle(connection)
  }

  /** Of `candidates`, the one with no call in flight whose last call ended longest ago; undefined when all are busy. */
  idlest (candidates: Iterable<UpstreamConnection>): UpstreamConnection | undefined {
    let found: UpstreamConnection | undefined
    let since = Infinity
    for (const connection of candidates) {
      if (connection.activeCalls.size > 0) continue
      const lastActive = this.#watched.get(connection)?.lastActive ?? -Infinity
      if (lastActive < since) {
        found = connection
        since = lastActive
      }
    }
    return found
  }

  forget (connection: UpstreamConnection): void {
    const watched = this.#watched.get(connection)
    if (watched === undefined) return
    clearTimeout(watched.timer)
    this.#watched.delete(connection)
  }

  clear (): void {
    for (const watched of this.#watched.values()) clearTimeout(watched.timer)
    this.#watched.clear()
  }
}
