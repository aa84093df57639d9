import type { RequestId } from '../protocol/json-rpc.ts'
import { scanMessage } from '../protocol/json-scan.ts'
import { rawResult } from '../protocol/raw-result.ts'

/**
 * The id and result of a JSON-RPC answer, read from its text without parsing the result; undefined
 * for anything else (a request, a notification, an error, text that is not valid JSON, a result
 * that is not an object), which the caller parses the ordinary way and so judges as before.
 */
export function rawAnswer (text: string): { id: RequestId, result: Record<string, unknown> } | undefined {
  const scan = scanMessage(text)
  if (scan === undefined || scan.resultMembers === undefined || scan.lineBreaks) return undefined
  const { members } = scan
  const result = members.get('result')
  const jsonrpc = members.get('jsonrpc')
  const idSpan = members.get('id')
  if (result === undefined || text.charCodeAt(result.start) !== 0x7b || jsonrpc === undefined || idSpan === undefined || members.has('method') || members.has('params')) return undefined
  const version = text.slice(jsonrpc.start, jsonrpc.end)
  if (version !== '"2.0"' && JSON.parse(version) !== '2.0') return undefined
  const id: unknown = JSON.parse(text.slice(idSpan.start, idSpan.end))
  if (typeof id !== 'string' && (typeof id !== 'number' || !Number.isFinite(id))) return undefined
  return { id, result: rawResult(text, result, scan.resultMembers) }
}
