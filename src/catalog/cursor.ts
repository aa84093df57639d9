import { RPC, RpcError } from '../protocol/json-rpc.ts'

const CURSOR_VERSION = 1

/**
 * Keyset cursors: a page ends at a name, the next page starts after it. The list is sorted by
 * exposed name, so a cursor stays valid and never repeats while upstreams come and go.
 */
export function encodeCursor (afterName: string): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, afterName])).toString('base64url')
}

export function decodeCursor (cursor: string): string {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    // Buffer skips characters outside the alphabet, so an edited cursor must re-encode to itself.
    if (Array.isArray(value) && value.length === 2 && value[0] === CURSOR_VERSION && typeof value[1] === 'string' && encodeCursor(value[1]) === cursor) return value[1]
  } catch { /* reported below */ }
  throw new RpcError(RPC.INVALID_PARAMS, 'Invalid cursor', { cursor })
}

/** Whether any item from `start` on passes `test`: a page's "is there more?", without copying the rest. */
export function anyFrom<T> (items: readonly T[], start: number, test: (item: T) => boolean): boolean {
  for (let i = start; i < items.length; i++) if (test(items[i] as T)) return true
  return false
}
