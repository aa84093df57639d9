/** Runs one `make` per key at a time; callers that come while it runs share its result. */
export function singleFlight<T> (): (key: string, make: () => Promise<T>) => Promise<T> {
  const running = new Map<string, Promise<T>>()
  return (key, make) => {
    const current = running.get(key)
    if (current !== undefined) return current
    const next = make().finally(() => { running.delete(key) })
    running.set(key, next)
    return next
  }
}
