// A text as the bytes it arrived in: the chunks an upstream's stdout or socket gave, never joined.
// A 30 MB result read from a pipe is some 460 chunks of 64 KiB; relaying them as they are costs no
// copy, where joining them and decoding the whole into a string cost two more copies of it.

/** UTF-8 bytes in pieces, read by absolute offset. Immutable: slices share the pieces' memory. */
export class ByteText {
  readonly pieces: readonly Buffer[]
  readonly length: number

  private constructor (pieces: readonly Buffer[], length: number) {
    this.pieces = pieces
    this.length = length
  }

  static of (pieces: readonly Buffer[]): ByteText {
    let length = 0
    for (const piece of pieces) length += piece.length
    return new ByteText(pieces, length)
  }

  /** The bytes [start, end), sharing memory with these. */
  slice (start: number, end: number): ByteText {
    if (start === 0 && end === this.length) return this
    const out: Buffer[] = []
    let offset = 0
    for (const piece of this.pieces) {
      const next = offset + piece.length
      if (next > start && offset < end) out.push(piece.subarray(Math.max(0, start - offset), Math.min(piece.length, end - offset)))
      if (next >= end) break
      offset = next
    }
    return new ByteText(out, end - start)
  }

  /** The byte at `at`, or -1 past the end. */
  byteAt (at: number): number {
    const [only] = this.pieces
    if (this.pieces.length === 1 && only !== undefined) return at < only.length ? only[at] as number : -1
    let offset = 0
    for (const piece of this.pieces) {
      if (at < offset + piece.length) return piece[at - offset] as number
      offset += piece.length
    }
    return -1
  }

  /** The bytes [start, end) decoded; the whole text by default. Callers pass valid UTF-8 boundaries. */
  toString (start = 0, end = this.length): string {
    const [only] = this.pieces
    if (this.pieces.length === 1 && only !== undefined) return only.toString('utf8', start, end)
    const part = this.slice(start, end)
    const [first] = part.pieces
    if (first === undefined) return ''
    return part.pieces.length === 1 ? first.toString('utf8') : Buffer.concat(part.pieces, part.length).toString('utf8')
  }
}
