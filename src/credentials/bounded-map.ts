/** A map that forgets its oldest entry past `max`: one entry per (principal, upstream) must not grow without end. */
export class BoundedMap<V> {
  readonly #max: number
  readonly #map = new Map<string, V>()

  constructor (max: number) {
    this.#max = max
  }

  get (key: string): V | undefined {
    return this.#map.get(key)
  }

  set (key: string, value: V): void {
    this.#map.delete(key)
    this.#map.set(key, value)
    if (this.#map.size > this.#max) {
      const oldest = this.#map.keys().next().value
      if (oldest !== undefined) this.#map.delete(oldest)
    }
  }

  delete (key: string): void {
    this.#map.delete(key)
  }
}
