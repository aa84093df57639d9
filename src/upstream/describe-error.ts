import { isSwitchboardError } from '../errors.ts'
import { RpcError } from '../protocol/json-rpc.ts'

/** An error as one line for a log or an upstream's lastError. */
export function describeError (err: unknown): string {
  if (err instanceof RpcError) return `JSON-RPC error ${err.code}: ${err.message}`
  if (isSwitchboardError(err)) return err.message
  if (err instanceof Error) return err.message
  return String(err)
}
