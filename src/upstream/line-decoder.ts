/**
 * Splits a text stream into lines in time linear in its size: each chunk is scanned once, and the
 * pieces of a line that spans many chunks are joined once, when its newline arrives. (Appending to
 * one buffer and rescanning it from the start after every chunk made a 30 MB line cost seconds.)
 */
export class LineDecoder {
  private parts: string[] = []
  private pendingLength = 0
  private readonly maxLineLength: number

  constructor (maxLineLength: number) {
    this.maxLineLength = maxLineLength
  }

  /**
   * Calls `onLine` for every line the chunk completes (without its `\n`, and without a trailing `\r`).
   * Returns false when the unterminated line has grown past the limit; it is then dropped.
   */
  push (chunk: string, onLine: (line: string) => void): boolean {
    let start = 0
    let index: number
    while ((index = chunk.indexOf('\n', start)) !== -1) {
      let line = chunk.slice(start, index)
      if (this.parts.length > 0) {
        this.parts.push(line)
        line = this.parts.join('')
        this.parts = []
        this.pendingLength = 0
      }
      onLine(line.endsWith('\r') ? line.slice(0, -1) : line)
      start = index + 1
    }
    if (start < chunk.length) {
      const rest = start === 0 ? chunk : chunk.slice(start)
      this.parts.push(rest)
      this.pendingLength += rest.length
    }
    if (this.pendingLength <= this.maxLineLength) return true
    this.parts = []
    this.pendingLength = 0
    return false
  }
}
