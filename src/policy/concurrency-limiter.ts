import type { ConcurrencyConfig } from '../config/access-schema.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'

/** Gives the slot back. Calling it again does nothing. */
export type Release = () => void

interface Waiter {
  resolve: (result: Release | 'busy') => void
  timer: NodeJS.Timeout | undefined
  signal: CancelSignal | undefined
  onAbort: () => void
}

/**
 * At most `limit` calls at once per upstream; the rest wait in FIFO order, each for at most
 * `maxWaitMs`, and no more than `maxQueued` of them. `acquire` never rejects: a waiter that times
 * out, finds the queue full or is aborted gets 'busy' (callers tell an abort apart by checking
 * `signal.aborted`). Whoever receives a Release owns a slot, even if its signal aborted since, and
 * must call it.
 */
export class ConcurrencyLimiter {
  readonly #limit: number
  readonly #maxWaitMs: number
  readonly #maxQueued: number
  #running = 0
  // A Set keeps insertion order (FIFO) and lets a timed-out or aborted waiter leave in O(1).
  readonly #waiters = new Set<Waiter>()

  constructor (config: ConcurrencyConfig) {
    this.#limit = config.limit
    this.#maxWaitMs = config.maxWaitMs
    this.#maxQueued = config.maxQueued
  }

  get running (): number { return this.#running }

  get queued (): number { return this.#waiters.size }

  /** Enqueues synchronously, so `queued` is up to date as soon as this returns. */
  acquire (signal?: CancelSignal): Promise<Release | 'busy'> {
    if (signal?.aborted === true) return Promise.resolve('busy')
    if (this.#running < this.#limit && this.#waiters.size === 0) {
      this.#running++
      return Promise.resolve(this.#release())
    }
    if (this.#waiters.size >= this.#maxQueued || this.#maxWaitMs === 0) return Promise.resolve('busy')
    return new Promise(resolve => {
      const waiter: Waiter = {
        resolve,
        timer: undefined,
        signal,
        onAbort: () => { this.#leave(waiter) }
      }
      waiter.timer = setTimeout(waiter.onAbort, this.#maxWaitMs)
      waiter.timer.unref()
      signal?.addEventListener('abort', waiter.onAbort, { once: true })
      this.#waiters.add(waiter)
    })
  }

  #leave (waiter: Waiter): void {
    if (!this.#waiters.delete(waiter)) return
    this.#forget(waiter)
    waiter.resolve('busy')
  }

  #forget (waiter: Waiter): void {
    clearTimeout(waiter.timer)
    waiter.signal?.removeEventListener('abort', waiter.onAbort)
  }

  #release (): Release {
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.#waiters.values().next()
      if (next.done === true) {
        this.#running--
        return
      }
      // Handed straight to the longest waiter: the slot never looks free, so no newcomer can jump the queue.
      this.#waiters.delete(next.value)
      this.#forget(next.value)
      next.value.resolve(this.#release())
    }
  }
}
