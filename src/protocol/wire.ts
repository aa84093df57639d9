// One JSON text per message on every downstream transport. A result may carry its own JSON, written
// once when it was built (a catalog page shared by many sessions): the answer then only wraps it.
import type { JsonRpcMessage } from './json-rpc.ts'

const OWN_JSON = Symbol('switchboard.ownJson')

interface WithOwnJson { [OWN_JSON]?: string }

/**
 * Freezes `result` and keeps its JSON text with it, so that every answer carrying it reuses the text.
 * The symbol is invisible to JSON.stringify: anything else that serializes the result sees the same.
 */
export function withOwnJson<T extends object> (result: T): Readonly<T> {
  Object.defineProperty(result, OWN_JSON, { value: JSON.stringify(result) })
  return Object.freeze(result)
}

/** The message as JSON text, the same as JSON.stringify gives, without serializing a result twice. */
export function messageJson (message: JsonRpcMessage): string {
  if ('result' in message) {
    const own = (message.result as WithOwnJson)[OWN_JSON]
    if (own !== undefined) return `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":${own}}`
  }
  return JSON.stringify(message)
}
