/**
 * Work asked for in bursts (re-lists after list_changed notifications): one run at a time, and
 * what is asked for during a run is done in exactly one more, as one batch.
 */
export class CoalescedRuns<K> {
  readonly #pending = new Set<K>()
  #running = false

  /**
   * Adds `items`; starts `run` unless one runs already or `canStart` is false (they wait for the
   * next start). `run` gets each batch in turn; answering false ends the runs and drops the rest.
   */
  add (items: readonly K[], canStart: boolean, run: (batch: K[]) => Promise<boolean>): void {
    for (const item of items) this.#pending.add(item)
    if (this.#running || !canStart) return
    this.#running = true
    void (async () => {
      try {
        while (this.#pending.size > 0) {
          const batch = [...this.#pending]
          this.#pending.clear()
          if (!await run(batch)) return
        }
      } finally {
        this.#running = false
        this.#pending.clear()
      }
    })()
  }
}
