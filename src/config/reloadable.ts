/**
 * A value that a reload may replace: a rate limiter, an authenticator, the config itself. Whoever
 * reads it calls `current()` at the moment of use, so nothing holds a stale copy and no dependency
 * bag is patched after construction.
 */
export interface Reloadable<T> {
  current: () => T
  /** Puts `next` in force, then closes the value it replaced when that one has a `close()`. */
  replace: (next: T) => void
}

export interface ReloadableOptions {
  /** A replaced value whose `close()` threw or rejected; the new value is in force either way. */
  onCloseError?: (err: unknown) => void
}

interface Closable { close: () => unknown }

function isClosable (value: unknown): value is Closable {
  return typeof value === 'object' && value !== null && typeof (value as Partial<Closable>).close === 'function'
}

function isThenable (value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as Partial<PromiseLike<unknown>>).then === 'function'
}

export function createReloadable<T> (initial: T, options: ReloadableOptions = {}): Reloadable<T> {
  let value = initial
  const failed = (err: unknown): void => {
    if (options.onCloseError === undefined) throw err
    options.onCloseError(err)
  }
  return {
    current: () => value,
    replace (next) {
      const old = value
      value = next
      if (old === next || !isClosable(old)) return
      let closing: unknown
      try {
        closing = old.close()
      } catch (err: unknown) {
        failed(err)
        return
      }
      // Not awaited: the old value finishes what it holds (a Redis connection) in the background.
      if (isThenable(closing)) closing.then(undefined, failed)
    }
  }
}
