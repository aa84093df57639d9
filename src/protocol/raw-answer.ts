import { ByteText } from './byte-text.ts'
import type { RequestId } from './json-rpc.ts'
import { MessageScanner, scanMessage, type MessageScan } from './json-scan.ts'
import { rawResult } from './raw-result.ts'

/** A message as its bytes, with their scan (made as the bytes arrived, or on first ask). */
export interface RawMessage {
  readonly bytes: ByteText
  scan: () => MessageScan | undefined
}

/** A message as the chunks it arrived in, scanned on first ask only: most are never relayed raw (no raw request was waiting). */
export function bytesMessage (pieces: readonly Buffer[]): RawMessage {
  return new LazyMessage(ByteText.of(pieces))
}

class LazyMessage implements RawMessage {
  readonly bytes: ByteText
  private scanned = false
  private result: MessageScan | undefined

  constructor (bytes: ByteText) {
    this.bytes = bytes
  }

  scan (): MessageScan | undefined {
    if (!this.scanned) {
      const { pieces } = this.bytes
      const [only] = pieces
      if (pieces.length === 1 && only !== undefined) {
        this.result = scanMessage(only)
      } else {
        const scanner = new MessageScanner()
        this.result = pieces.every(piece => scanner.push(piece)) ? scanner.end() : undefined
      }
      this.scanned = true
    }
    return this.result
  }
}

/**
 * The id and result of a JSON-RPC answer, read from its bytes without parsing the result; undefined
 * for anything else (a request, a notification, an error, bytes that are not valid JSON or UTF-8, a
 * result that is not an object), which the caller parses the ordinary way and so judges as before.
 */
export function rawAnswer (input: string | RawMessage): { id: RequestId, result: Record<string, unknown> } | undefined {
  // Text (an HTTP upstream's SSE event) is scanned as its UTF-8 bytes.
  const message = typeof input === 'string' ? bytesMessage([Buffer.from(input, 'utf8')]) : input
  const scan = message.scan()
  if (scan === undefined || scan.resultMembers === undefined || scan.lineBreaks) return undefined
  const { bytes } = message
  const { members } = scan
  const result = members.get('result')
  const jsonrpc = members.get('jsonrpc')
  const idSpan = members.get('id')
  if (result === undefined || bytes.byteAt(result.start) !== 0x7b || jsonrpc === undefined || idSpan === undefined || members.has('method') || members.has('params') || members.has('error')) return undefined
  if (!isVersion2(bytes, jsonrpc.start, jsonrpc.end) && JSON.parse(bytes.toString(jsonrpc.start, jsonrpc.end)) !== '2.0') return undefined
  const id: unknown = JSON.parse(bytes.toString(idSpan.start, idSpan.end))
  if (typeof id !== 'string' && (typeof id !== 'number' || !Number.isFinite(id))) return undefined
  return { id, result: rawResult(bytes, result, scan.resultMembers) }
}

/** Whether bytes [start, end) are `"2.0"`, read without decoding them. */
function isVersion2 (bytes: ByteText, start: number, end: number): boolean {
  return end - start === 5 && bytes.byteAt(start) === 0x22 && bytes.byteAt(start + 1) === 0x32 && bytes.byteAt(start + 2) === 0x2e && bytes.byteAt(start + 3) === 0x30 && bytes.byteAt(start + 4) === 0x22
}
