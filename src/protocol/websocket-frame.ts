import type WebSocket from 'ws'
import { type JsonRpcMessage, validateMessage } from './json-rpc.ts'

/** One MCP message per text frame; anything else is reported, never thrown. Shared by both WebSocket ends. */
export function decodeFrame (data: WebSocket.RawData, isBinary: boolean): { message: JsonRpcMessage } | { error: Error } {
  if (isBinary) return { error: new Error('Dropped binary WebSocket frame: MCP messages must be sent as text frames') }
  let value: unknown
  try {
    value = JSON.parse(rawDataToString(data))
  } catch (cause) {
    return { error: new Error('Dropped WebSocket frame that is not a JSON-RPC 2.0 message: not JSON', { cause }) }
  }
  const message = validateMessage(value)
  return message === undefined ? { error: new Error('Dropped WebSocket frame that is not a JSON-RPC 2.0 message') } : { message }
}

function rawDataToString (data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8')
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8')
  return Buffer.from(data).toString('utf8')
}
