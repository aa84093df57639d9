// The requests a lean driver has sent and not yet had answered, for the drivers whose answers arrive
// on a shared stream (legacy SSE, stdio): matched by JSON-RPC id, each bounded by its own deadline,
// which one sweep timer enforces (no timer per request).

const SWEEP_MS = 250

/** A JSON-RPC answer as the lean drivers read it: nothing validated beyond what they check. */
export interface JsonRpcAnswer { id?: unknown, result?: unknown, error?: { code?: unknown, message?: unknown } }

interface Pending { resolve: (result: unknown) => void, reject: (err: Error) => void, deadline: number }

export class PendingRequests {
  readonly #pending = new Map<number, Pending>()
  readonly #timeoutMs: number
  readonly #sweeper: NodeJS.Timeout

  constructor (timeoutMs: number) {
    this.#timeoutMs = timeoutMs
    this.#sweeper = setInterval(() => { this.#sweep() }, SWEEP_MS)
    this.#sweeper.unref()
  }

  /** The answer to request `id`, once settle() sees it; rejects after the timeout. */
  add (id: number): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, deadline: performance.now() + this.#timeoutMs })
    })
  }

  /** Drops a request that could not be sent (its promise is left to the caller's error path). */
  forget (id: number): void {
    this.#pending.delete(id)
  }

  /** Settles the request this answer is for; false when it is for none of ours. */
  settle (answer: JsonRpcAnswer): boolean {
    const pending = typeof answer.id === 'number' ? this.#pending.get(answer.id) : undefined
    if (pending === undefined) return false
    this.#pending.delete(answer.id as number)
    if (answer.error !== undefined) pending.reject(new Error(`JSON-RPC error ${String(answer.error.code)}: ${String(answer.error.message)}`))
    else if (answer.result === undefined || answer.result === null) pending.reject(new Error('answer without a result'))
    else pending.resolve(answer.result)
    return true
  }

  failAll (err: Error): void {
    for (const p of this.#pending.values()) p.reject(err)
    this.#pending.clear()
  }

  /** Stops the sweeper and fails what is still pending. */
  close (err: Error): void {
    clearInterval(this.#sweeper)
    this.failAll(err)
  }

  #sweep (): void {
    const now = performance.now()
    for (const [id, p] of this.#pending) {
      if (p.deadline > now) continue
      this.#pending.delete(id)
      p.reject(new Error(`no answer within ${this.#timeoutMs} ms`))
    }
  }
}
