// Minimal JSON-RPC 2.0 shapes shared by the downstream and upstream sides.
import { RPC } from '../errors.ts'
// Messages are handled as plain parsed JSON so results pass through byte-for-byte in meaning.

export type RequestId = string | number

export interface JsonRpcRequest { jsonrpc: '2.0', id: RequestId, method: string, params?: Record<string, unknown> }
export interface JsonRpcNotification { jsonrpc: '2.0', method: string, params?: Record<string, unknown> }
export interface JsonRpcResult { jsonrpc: '2.0', id: RequestId, result: Record<string, unknown> }
export interface JsonRpcErrorObject { code: number, message: string, data?: unknown }
export interface JsonRpcError { jsonrpc: '2.0', id?: RequestId | null, error: JsonRpcErrorObject }
export type JsonRpcResponse = JsonRpcResult | JsonRpcError
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse

// The wire's error codes are declared with the gateway's own (src/errors.ts), which names its JSON-RPC code per SB_ERR_*.
export { MCP_ERROR, RPC } from '../errors.ts'

export function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isId (value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))
}

export function isRequest (m: JsonRpcMessage): m is JsonRpcRequest {
  return 'method' in m && 'id' in m
}

export function isNotification (m: JsonRpcMessage): m is JsonRpcNotification {
  return 'method' in m && !('id' in m)
}

export function isResponse (m: JsonRpcMessage): m is JsonRpcResponse {
  return !('method' in m) && ('result' in m || 'error' in m)
}

/** Checks the envelope only; params are checked by whoever handles the method. */
export function validateMessage (value: unknown): JsonRpcMessage | undefined {
  if (!isRecord(value) || value.jsonrpc !== '2.0') return undefined
  if (value.params !== undefined && !isRecord(value.params)) return undefined
  if (typeof value.method === 'string') {
    if (!('id' in value)) return value as unknown as JsonRpcNotification
    return isId(value.id) ? value as unknown as JsonRpcRequest : undefined
  }
  if ('result' in value) return isId(value.id) && isRecord(value.result) ? value as unknown as JsonRpcResult : undefined
  if ('error' in value) {
    const e = value.error
    if (value.id !== undefined && value.id !== null && !isId(value.id)) return undefined
    return isRecord(e) && typeof e.code === 'number' && typeof e.message === 'string' ? value as unknown as JsonRpcError : undefined
  }
  return undefined
}

export function rpcResult (id: RequestId, result: Record<string, unknown>): JsonRpcResult {
  return { jsonrpc: '2.0', id, result }
}

/**
 * Every error the gateway writes, its own or relayed. JSON-RPC wants an integer code; a peer's 1.5, or
 * 1e400 (parsed as Infinity, which JSON.stringify writes as null), becomes -32603 with the message kept.
 */
export function rpcError (id: RequestId | null, code: number, message: string, data?: unknown): JsonRpcError {
  const safeCode = Number.isInteger(code) ? code : RPC.INTERNAL_ERROR
  const error: JsonRpcErrorObject = data === undefined ? { code: safeCode, message } : { code: safeCode, message, data }
  return { jsonrpc: '2.0', id, error }
}

/**
 * A JSON-RPC error to be answered on the wire, thrown by handlers. `cause`: the unexpected error it
 * stands for (never sent; logged where the answer is made).
 */
export class RpcError extends Error {
  readonly code: number
  readonly data: unknown
  constructor (code: number, message: string, data?: unknown, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'RpcError'
    this.code = code
    this.data = data
  }
}
