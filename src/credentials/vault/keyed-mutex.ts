/**
 * One holder per key within this process: each `run` waits for the previous holder of its key (a
 * promise chain, so waiters go in order) and releases in `finally`, whether `fn` resolved or threw.
 * A key whose chain has drained is forgotten, so the map holds only keys in use.
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>()

  async run<T> (key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve()
    let release = (): void => {}
    const held = new Promise<void>(resolve => { release = resolve })
    const tail = previous.then(async () => await held)
    this.#tails.set(key, tail)
    await previous
    try {
      return await fn()
    } finally {
      release()
      if (this.#tails.get(key) === tail) this.#tails.delete(key)
    }
  }
}
