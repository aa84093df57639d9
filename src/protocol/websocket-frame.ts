import type WebSocket from 'ws'
import { parseJSONRPCMessage, type JSONRPCMessage } from '@modelcontextprotocol/client'

/** One MCP message per text frame; anything else is reported, never thrown. Shared by both WebSocket ends. */
export function decodeFrame (data: WebSocket.RawData, isBinary: boolean): { message: JSONRPCMessage } | { error: Error } {
  if (isBinary) return { error: new Error('Dropped binary WebSocket frame: MCP messages must be sent as text frames') }
  try {
    return { message: parseJSONRPCMessage(JSON.parse(rawDataToString(data))) }
  } catch (cause) {
    return { error: new Error('Dropped WebSocket frame that is not a JSON-RPC 2.0 message', { cause }) }
  }
}

function rawDataToString (data: WebSocket.RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8')
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8')
  return Buffer.from(data).toString('utf8')
}
