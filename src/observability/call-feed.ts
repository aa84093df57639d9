import type { Actor } from '../auth/principal.ts'
import type { CallOutcome } from './metrics.ts'

/**
 * One finished tools/call as the console's Live view and its per-upstream statistics see it: who
 * called what, where it went and how it ended. Never the arguments or the result.
 */
export interface CallEvent {
  callId: string
  /** Milliseconds since the epoch when the call ended. */
  at: number
  principal: string
  /** Set when the admin API made the call as `principal`; absent for the principal's own calls. */
  actor?: Actor
  /** The endpoint path segment; undefined for /mcp. */
  endpoint: string | undefined
  tool: string
  /** '' when the name resolved to no upstream. */
  upstream: string
  outcome: CallOutcome
  durationMs: number
}

export type CallListener = (event: CallEvent) => void

/**
 * Every finished tools/call of this replica, published to whoever listens (the call statistics, a
 * console's live stream). A listener that throws is dropped, never the call's problem.
 */
export class CallFeed {
  readonly #listeners = new Set<CallListener>()

  /** Starts delivering; the function returned stops it. */
  subscribe (listener: CallListener): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  get listening (): number { return this.#listeners.size }

  publish (event: CallEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event)
      } catch {
        this.#listeners.delete(listener)
      }
    }
  }
}
