/**
 * Splits a text stream into lines ended by LF, CR or CR LF (as the SSE grammar allows; a CR LF cut
 * between two chunks is one line end), in time linear in its size: each chunk is scanned once, and
 * the pieces of a line that spans many chunks are joined once, when its end arrives. (Appending to
 * one buffer and rescanning it from the start after every chunk made a 30 MB line cost seconds.)
 */
export class LineDecoder {
  private parts: string[] = []
  private pendingLength = 0
  /** The last chunk ended with a CR: an LF that starts the next one ends nothing more. */
  private afterCr = false
  private readonly maxLineLength: number

  constructor (maxLineLength: number) {
    this.maxLineLength = maxLineLength
  }

  /**
   * Calls `onLine` for every line the chunk completes (without its line end). Returns false when
   * the unterminated line has grown past the limit; it is then dropped.
   */
  push (chunk: string, onLine: (line: string) => void): boolean {
    if (chunk === '') return true
    let start = this.afterCr && chunk.charCodeAt(0) === 0x0a ? 1 : 0
    this.afterCr = false
    let lf = chunk.indexOf('\n', start)
    let cr = chunk.indexOf('\r', start)
    while (lf !== -1 || cr !== -1) {
      const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr
      let line = chunk.slice(start, end)
      if (this.parts.length > 0) {
        this.parts.push(line)
        line = this.parts.join('')
        this.parts = []
        this.pendingLength = 0
      }
      onLine(line)
      start = end + 1
      if (end === cr) {
        if (start === chunk.length) this.afterCr = true
        else if (chunk.charCodeAt(start) === 0x0a) start++
        cr = chunk.indexOf('\r', start)
      }
      if (lf !== -1 && lf < start) lf = chunk.indexOf('\n', start)
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
