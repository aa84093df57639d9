import { ByteText } from '../protocol/byte-text.ts'
import { MessageScanner } from '../protocol/json-scan.ts'
import { bytesMessage, type RawMessage } from '../protocol/raw-answer.ts'

const NEWLINE = 0x0a
/** A line longer than this is scanned chunk by chunk as it arrives, instead of in one pass at its end. */
const SCAN_AS_IT_ARRIVES_BYTES = 64 * 1024

/**
 * Splits a byte stream (a child's stdout) into newline-delimited messages, kept as the chunks they
 * arrived in: a line within one chunk is a view of it, a line across many is the list of its
 * pieces, never joined. A long line is scanned as its pieces arrive (json-scan.ts), so that a 30 MB
 * result costs no long pass when its newline comes, and no copy of it is made here.
 */
export class JsonLineReader {
  private pieces: Buffer[] = []
  private length = 0
  private scanner: MessageScanner | undefined
  private readonly maxLineBytes: number

  constructor (maxLineBytes: number) {
    this.maxLineBytes = maxLineBytes
  }

  /**
   * Calls `onLine` for every line the chunk completes. Returns false when the unterminated line has
   * grown past the limit; it is then dropped.
   */
  push (chunk: Buffer, onLine: (line: RawMessage) => void): boolean {
    let start = 0
    let newline: number
    while ((newline = chunk.indexOf(NEWLINE, start)) !== -1) {
      const piece = chunk.subarray(start, newline)
      if (this.pieces.length === 0) {
        onLine(bytesMessage([piece]))
      } else {
        this.add(piece)
        onLine(this.take())
      }
      start = newline + 1
    }
    if (start < chunk.length) this.add(start === 0 ? chunk : chunk.subarray(start))
    if (this.length <= this.maxLineBytes) return true
    this.pieces = []
    this.length = 0
    this.scanner = undefined
    return false
  }

  private add (piece: Buffer): void {
    this.pieces.push(piece)
    this.length += piece.length
    if (this.scanner !== undefined) {
      this.scanner.push(piece)
    } else if (this.length >= SCAN_AS_IT_ARRIVES_BYTES) {
      const scanner = new MessageScanner()
      for (const earlier of this.pieces) scanner.push(earlier)
      this.scanner = scanner
    }
  }

  private take (): RawMessage {
    const { pieces, scanner } = this
    this.pieces = []
    this.length = 0
    this.scanner = undefined
    if (scanner === undefined) return bytesMessage(pieces)
    const scan = scanner.end()
    return { bytes: ByteText.of(pieces), scan: () => scan }
  }
}
