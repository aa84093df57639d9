import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SseReader } from '../../../src/upstream/sse-reader.ts'

function reader (max = 1024): { reader: SseReader, events: string[], retries: number[] } {
  const events: string[] = []
  const retries: number[] = []
  return { reader: new SseReader(max, { event: (data) => { events.push(data) }, retry: (ms) => { retries.push(ms) } }), events, retries }
}

test('events, ids, retry, comments and other event types, in CRLF or LF lines', () => {
  const { reader: r, events, retries } = reader()
  assert.equal(r.push(Buffer.from(': hi\r\nretry: 25\r\nid: 1\r\ndata: a\r\ndata:b\r\n\r\nevent: other\ndata: skipped\n\nevent: message\ndata: c\n\n')), true)
  assert.deepEqual(events, ['a\nb', 'c'])
  assert.deepEqual(retries, [25])
  assert.equal(r.lastEventId, '1')
})

test('an event with no data (a priming event) is not dispatched; an empty data line twice is', () => {
  const { reader: r, events } = reader()
  r.push(Buffer.from('id: p\ndata:\n\ndata:\ndata:\n\n'))
  assert.deepEqual(events, ['\n'])
  assert.equal(r.lastEventId, 'p')
})

test('a character split between chunks, and an event split between them, arrive whole', () => {
  const { reader: r, events } = reader()
  const bytes = Buffer.from('data: {"text":"é€😀"}\n\ndata: ü\n\n')
  // Every split point, including inside each multi-byte character.
  for (let cut = 1; cut < bytes.length; cut++) {
    const one = reader()
    one.reader.push(bytes.subarray(0, cut))
    one.reader.push(bytes.subarray(cut))
    assert.deepEqual(one.events, ['{"text":"é€😀"}', 'ü'], `cut at ${cut}`)
  }
  r.push(bytes)
  assert.deepEqual(events, ['{"text":"é€😀"}', 'ü'])
})

test('an event longer than the limit is refused', () => {
  const { reader: r, events } = reader(16)
  assert.equal(r.push(Buffer.from('data: ' + 'x'.repeat(40))), false)
  assert.deepEqual(events, [])
})
