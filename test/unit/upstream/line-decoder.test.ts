import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { LineDecoder } from '../../../src/upstream/line-decoder.ts'

describe('LineDecoder', () => {
  it('ends lines on LF, CR and CR LF, wherever the chunks are cut (a CR LF cut in two is one line end)', () => {
    for (const text of ['a\nb\r\nc\rd\r\r\ne\n\n', 'data: x\r\rdata: y\r\n\r\n', '\r\n\r\n', 'x\r', 'abc', 'é😀\r\n日\r']) {
      const expected = text.split(/\r\n|\r|\n/)
      expected.pop()
      for (let cut = 0; cut <= text.length; cut++) {
        for (let cut2 = cut; cut2 <= text.length; cut2++) {
          const lines = new LineDecoder(1000)
          const seen: string[] = []
          for (const part of [text.slice(0, cut), text.slice(cut, cut2), text.slice(cut2)]) lines.push(part, line => seen.push(line))
          assert.deepEqual(seen, expected, JSON.stringify([text, cut, cut2]))
        }
      }
    }
  })

  it('drops a line that grows past its limit and says so', () => {
    const lines = new LineDecoder(4)
    const seen: string[] = []
    assert.equal(lines.push('abc', line => seen.push(line)), true)
    assert.equal(lines.push('defg', line => seen.push(line)), false)
    assert.equal(lines.push('ok\n', line => seen.push(line)), true)
    assert.deepEqual(seen, ['ok'])
  })
})
