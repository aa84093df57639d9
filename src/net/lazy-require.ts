import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

/**
 * A CommonJS dependency loaded on first use, synchronously: what only some configs need (Redis,
 * rate limiting) costs no memory in a gateway that does not use it.
 */
export function lazyRequire<T> (id: string): () => T {
  let loaded: T | undefined
  return () => (loaded ??= require(id) as T)
}
