import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  MAX_EVENT_ID_LENGTH, MemoryEventStore, formatEventId, newStreamId, parseEventId
} from '../../../src/session/event-store.ts'
import type { MemoryEventStoreLimits, StoredEvent } from '../../../src/session/event-store.ts'
import { fill, msg, range, seqsOf } from '../../helpers/event-store-fixtures.ts'

const ROOMY: MemoryEventStoreLimits = { maxEventsPerStream: 1000, maxStreamsPerSession: 100, maxBytesPerSession: 1_000_000 }

/** mulberry32: a seeded generator, so a failing property run can be repeated. */
function rng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('event ids', () => {
  it('parse back to the stream and seq they were formatted from', () => {
    const random = rng(1)
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
    for (let i = 0; i < 2000; i++) {
      const length = 1 + Math.floor(random() * 40)
      let streamId = ''
      for (let j = 0; j < length; j++) streamId += alphabet[Math.floor(random() * alphabet.length)]
      const seq = [0, 1, Number.MAX_SAFE_INTEGER, Math.floor(random() * 1e6), Math.floor(random() * Number.MAX_SAFE_INTEGER)][i % 5] as number
      assert.deepEqual(parseEventId(formatEventId(streamId, seq)), { streamId, seq })
    }
  })

  it('new stream ids are url-safe, unique and never contain the separator', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 1000; i++) {
      const streamId = newStreamId()
      assert.match(streamId, /^[A-Za-z0-9_-]{16}$/)
      seen.add(streamId)
      assert.deepEqual(parseEventId(formatEventId(streamId, i)), { streamId, seq: i })
    }
    assert.equal(seen.size, 1000)
  })

  it('rejects malformed, negative, non-integer, non-canonical and overlong ids', () => {
    const bad = [
      '', '.', 'abc', 'abc.', '.5', 'abc.-1', 'abc.1.5', 'abc.1.2', 'abc.01', 'abc.00', 'abc.+1', 'abc.1e3', 'abc.0x10',
      'abc. 1', 'abc.1 ', ' abc.1', 'a b.1', 'ab/c.1', 'ab.c.1', 'abc.1\n', 'abc\n.1', 'abc.Infinity', 'abc.NaN', 'abc.١',
      'abc.9007199254740992', 'abc.99999999999999999', 'é.1', 'abc-1', 'abc_1',
      'x'.repeat(MAX_EVENT_ID_LENGTH - 1) + '.1', 'x'.repeat(10_000) + '.1'
    ]
    for (const id of bad) assert.equal(parseEventId(id), undefined, `${JSON.stringify(id)} should be rejected`)
    assert.equal(parseEventId(123 as unknown as string), undefined)
    const longest = 'x'.repeat(MAX_EVENT_ID_LENGTH - 2) + '.1'
    assert.deepEqual(parseEventId(longest), { streamId: 'x'.repeat(MAX_EVENT_ID_LENGTH - 2), seq: 1 })
  })

  it('accepts only what formats back to the same text (random garbage and mutated ids)', () => {
    const random = rng(2)
    const alphabet = 'ab9_-.0 1+e/\n%é'
    const pick = (): string => alphabet[Math.floor(random() * alphabet.length)] as string
    let accepted = 0
    for (let i = 0; i < 20_000; i++) {
      let text = ''
      if (i % 2 === 0) {
        const length = Math.floor(random() * 12)
        for (let j = 0; j < length; j++) text += pick()
      } else {
        text = formatEventId('ab-_9', Math.floor(random() * 1000))
        for (let edits = 1 + Math.floor(random() * 2); edits > 0; edits--) {
          const at = Math.floor(random() * (text.length + 1))
          const kind = Math.floor(random() * 3)
          text = text.slice(0, at) + (kind === 1 ? '' : pick()) + text.slice(kind === 0 ? at : at + 1)
        }
      }
      const parsed = parseEventId(text)
      if (parsed === undefined) continue
      accepted++
      assert.equal(formatEventId(parsed.streamId, parsed.seq), text)
    }
    assert.ok(accepted > 100, `the generator should hit valid ids too (${accepted})`)
  })

  it('refuses to format an id that would not parse back', () => {
    for (const streamId of ['', 'a.b', 'a b', 'é', 'x'.repeat(MAX_EVENT_ID_LENGTH)]) {
      assert.throws(() => formatEventId(streamId, 1), `stream id ${JSON.stringify(streamId)}`)
    }
    for (const seq of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.MAX_SAFE_INTEGER + 1]) {
      assert.throws(() => formatEventId('abc', seq), RangeError, `seq ${seq}`)
    }
  })
})

describe('MemoryEventStore', () => {
  it('replays the events after each position, oldest first, and [] after the newest', async () => {
    const store = new MemoryEventStore(ROOMY)
    const ids = fill(store, 'S', 'st', range(0, 10))
    for (let i = 0; i < ids.length; i++) {
      const replay = await store.replayAfter('S', 'st', ids[i] as string)
      assert.deepEqual(replay, range(i + 1, 10).map(seq => ({ id: formatEventId('st', seq), message: msg(seq) })), `after ${i}`)
    }
    assert.deepEqual(await store.replayAfter('S', 'st', ids[9] as string), [])
  })

  it('replays by seq when the caller leaves gaps, but only after ids it issued', async () => {
    const store = new MemoryEventStore(ROOMY)
    fill(store, 'S', 'st', [1, 5, 6, 100])
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.5')), [6, 100])
    for (const afterSeq of [0, 2, 7, 101]) assert.equal(await store.replayAfter('S', 'st', `st.${afterSeq}`), undefined)
  })

  it('returns undefined for an unknown session, stream or id, or an id of another stream', async () => {
    const store = new MemoryEventStore(ROOMY)
    fill(store, 'S', 'a', [0, 1, 2])
    fill(store, 'S', 'b', [0, 1, 2])
    assert.equal(await store.replayAfter('nope', 'a', 'a.0'), undefined)
    assert.equal(await store.replayAfter('S', 'c', 'c.0'), undefined)
    assert.equal(await store.replayAfter('S', 'a', 'b.0'), undefined, 'the id names stream b')
    assert.equal(await store.replayAfter('S', 'a', 'a.3'), undefined, 'never issued')
    for (const garbage of ['', 'a', 'a.-1', 'a.01', 'a.0.0', 'x'.repeat(300)]) {
      assert.equal(await store.replayAfter('S', 'a', garbage), undefined)
    }
  })

  it('snapshots messages: later mutation of the appended or the replayed object changes nothing', async () => {
    const store = new MemoryEventStore(ROOMY)
    const message = { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'hi' }] } }
    store.append('S', 'st', 'st.0', { jsonrpc: '2.0', method: 'ping' })
    store.append('S', 'st', 'st.1', message)
    message.id = 99
    const first = await store.replayAfter('S', 'st', 'st.0')
    assert.deepEqual(first, [{ id: 'st.1', message: { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'hi' }] } } }])
    ;(first?.[0]?.message as { id: number }).id = 1
    assert.deepEqual(await store.replayAfter('S', 'st', 'st.0'), [{ id: 'st.1', message: { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'hi' }] } } }])
  })

  it('keeps only the newest maxEventsPerStream events of a stream', async () => {
    const store = new MemoryEventStore({ ...ROOMY, maxEventsPerStream: 3 })
    fill(store, 'S', 'st', range(0, 10))
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.7')), [8, 9])
    // Seq 6 itself is gone, but nothing after it is: the client that saw it loses nothing.
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'st', 'st.6')), [7, 8, 9])
    for (const seq of [0, 4, 5]) assert.equal(await store.replayAfter('S', 'st', `st.${seq}`), undefined, `after ${seq}`)
  })

  it('keeps maxStreamsPerSession streams, evicting the one appended to least recently', async () => {
    const store = new MemoryEventStore({ ...ROOMY, maxStreamsPerSession: 2 })
    fill(store, 'S', 'a', [0, 1])
    fill(store, 'S', 'b', [0, 1])
    fill(store, 'S', 'c', [0, 1])
    assert.equal(await store.replayAfter('S', 'a', 'a.0'), undefined, 'oldest stream evicted whole')
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'b', 'b.0')), [1])
    fill(store, 'S', 'b', [2])
    fill(store, 'S', 'd', [0])
    assert.equal(await store.replayAfter('S', 'c', 'c.0'), undefined, 'c was idle longer than b')
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'b', 'b.0')), [1, 2])
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'd', 'd.0')), [])
  })

  it('starts an evicted stream afresh when it is appended to again', async () => {
    const store = new MemoryEventStore({ ...ROOMY, maxStreamsPerSession: 1 })
    fill(store, 'S', 'a', [0, 1])
    fill(store, 'S', 'b', [0])
    fill(store, 'S', 'a', [2, 3])
    assert.equal(await store.replayAfter('S', 'a', 'a.0'), undefined)
    assert.equal(await store.replayAfter('S', 'a', 'a.1'), undefined)
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'a', 'a.2')), [3])
  })

  it('keeps at most maxBytesPerSession of serialised messages, evicting the oldest across streams', async () => {
    // Each message below serialises to exactly 10 bytes: "xxxxxxxx" with its quotes.
    const store = new MemoryEventStore({ ...ROOMY, maxBytesPerSession: 35 })
    const ten = 'x'.repeat(8)
    store.append('S', 'a', 'a.0', ten)
    store.append('S', 'b', 'b.0', ten)
    store.append('S', 'a', 'a.1', ten)
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'a', 'a.0')), [1], '30 bytes fit')
    store.append('S', 'b', 'b.1', ten)
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'a', 'a.0')), [1], 'a.0 evicted, a.0 was its newest eviction')
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'b', 'b.0')), [1], 'b.0 kept')
    store.append('S', 'a', 'a.2', ten)
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'b', 'b.0')), [1], 'b.0 was next oldest')
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'b', 'b.1')), [])
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'a', 'a.0')), [1, 2])
    // Bytes are UTF-8: "éééé" (6 characters) is 10 bytes, so each of these evicts one more: a.1, then b.1.
    store.append('S', 'c', 'c.0', 'éééé')
    store.append('S', 'c', 'c.1', 'éééé')
    assert.equal(await store.replayAfter('S', 'a', 'a.0'), undefined)
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'a', 'a.1')), [2])
    assert.equal(await store.replayAfter('S', 'b', 'b.0'), undefined)
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'c', 'c.0')), [1])
  })

  it('does not keep a single message larger than the byte cap', async () => {
    const store = new MemoryEventStore({ ...ROOMY, maxBytesPerSession: 50 })
    store.append('S', 'a', 'a.0', 'small')
    store.append('S', 'a', 'a.1', 'x'.repeat(100))
    assert.equal(await store.replayAfter('S', 'a', 'a.0'), undefined, 'a.1 can no longer be replayed')
    assert.deepEqual(await store.replayAfter('S', 'a', 'a.1'), [])
    store.append('S', 'a', 'a.2', 'small')
    assert.deepEqual(seqsOf(await store.replayAfter('S', 'a', 'a.1')), [2])
  })

  it('isolates sessions: same stream id, own events, own caps', async () => {
    const store = new MemoryEventStore({ ...ROOMY, maxBytesPerSession: 300, maxStreamsPerSession: 1 })
    fill(store, 'S1', 'st', [0, 1])
    fill(store, 'S2', 'st', [0, 1, 2])
    for (let seq = 0; seq < 20; seq++) store.append('S1', 'other', formatEventId('other', seq), 'x'.repeat(20))
    assert.equal(await store.replayAfter('S1', 'st', 'st.0'), undefined)
    assert.deepEqual(seqsOf(await store.replayAfter('S2', 'st', 'st.0')), [1, 2])
    assert.deepEqual(seqsOf(await store.replayAfter('S1', 'other', 'other.18')), [19])
    assert.equal(await store.replayAfter('S2', 'other', 'other.18'), undefined)
  })

  it('isolates streams of one session', async () => {
    const store = new MemoryEventStore(ROOMY)
    for (let seq = 0; seq < 5; seq++) {
      fill(store, 'S', 'a', [seq])
      fill(store, 'S', 'b', [seq])
    }
    assert.deepEqual(await store.replayAfter('S', 'a', 'a.2'), [3, 4].map(seq => ({ id: `a.${seq}`, message: msg(seq) })))
    assert.deepEqual(await store.replayAfter('S', 'b', 'b.2'), [3, 4].map(seq => ({ id: `b.${seq}`, message: msg(seq) })))
  })

  it('dropSession forgets that session only', async () => {
    const store = new MemoryEventStore(ROOMY)
    fill(store, 'S1', 'a', [0, 1])
    fill(store, 'S1', 'b', [0, 1])
    fill(store, 'S2', 'a', [0, 1])
    store.dropSession('S1')
    store.dropSession('unknown')
    assert.equal(await store.replayAfter('S1', 'a', 'a.0'), undefined)
    assert.equal(await store.replayAfter('S1', 'b', 'b.0'), undefined)
    assert.deepEqual(seqsOf(await store.replayAfter('S2', 'a', 'a.0')), [1])
    fill(store, 'S1', 'a', [0, 1])
    assert.deepEqual(seqsOf(await store.replayAfter('S1', 'a', 'a.0')), [1], 'a later session with that id starts empty')
  })

  it('rejects an append with a malformed, foreign or non-increasing id, or an unserialisable message', async () => {
    const store = new MemoryEventStore(ROOMY)
    fill(store, 'S', 'a', [5])
    assert.throws(() => { store.append('S', 'a', 'b.6', msg(6)) }, TypeError)
    assert.throws(() => { store.append('S', 'a', 'a.06', msg(6)) }, TypeError)
    assert.throws(() => { store.append('S', 'a', 'garbage', msg(6)) }, TypeError)
    assert.throws(() => { store.append('S', 'a', 'a.5', msg(5)) }, RangeError)
    assert.throws(() => { store.append('S', 'a', 'a.4', msg(4)) }, RangeError)
    assert.throws(() => { store.append('S', 'a', 'a.6', undefined) }, TypeError)
    assert.throws(() => { store.append('S', 'a', 'a.6', { n: 1n }) }, TypeError)
    assert.deepEqual(await store.replayAfter('S', 'a', 'a.5'), [], 'nothing was recorded')
  })

  it('rejects limits that are not positive integers', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(() => new MemoryEventStore({ ...ROOMY, maxEventsPerStream: bad }), RangeError)
      assert.throws(() => new MemoryEventStore({ ...ROOMY, maxStreamsPerSession: bad }), RangeError)
      assert.throws(() => new MemoryEventStore({ ...ROOMY, maxBytesPerSession: bad }), RangeError)
    }
  })

  it('after close, replays nothing and ignores appends', async () => {
    const store = new MemoryEventStore(ROOMY)
    fill(store, 'S', 'a', [0, 1])
    await store.close()
    store.append('S', 'a', 'a.2', msg(2))
    assert.equal(await store.replayAfter('S', 'a', 'a.0'), undefined)
    await store.close()
  })

  it('handles 100k appends under every cap and still replays exactly', async () => {
    // About 80 bytes per message: 3 × 500 events would be 120 kB, so the byte cap bites too; and
    // every thousandth event opens a short-lived stream that pushes the previous one out.
    const store = new MemoryEventStore({ maxEventsPerStream: 500, maxStreamsPerSession: 4, maxBytesPerSession: 100_000 })
    const streamOf = (seq: number): string => seq % 1000 === 999 ? `t${seq}` : ['a', 'b', 'c'][seq % 3] as string
    for (let seq = 0; seq < 100_000; seq++) {
      const stream = streamOf(seq)
      store.append('S', stream, formatEventId(stream, seq), msg(seq))
    }
    const replay = await store.replayAfter('S', 'a', formatEventId('a', 99_003))
    assert.deepEqual(seqsOf(replay), range(99_004, 100_000).filter(seq => streamOf(seq) === 'a'))
    assert.equal(await store.replayAfter('S', 'a', formatEventId('a', 60_000)), undefined)
    assert.deepEqual(await store.replayAfter('S', 't99999', 't99999.99999'), [])
    assert.equal(await store.replayAfter('S', 't98999', 't98999.98999'), undefined)

    const big = new MemoryEventStore({ maxEventsPerStream: 100_000, maxStreamsPerSession: 1, maxBytesPerSession: 1e9 })
    for (let seq = 0; seq < 100_000; seq++) big.append('S', 'st', formatEventId('st', seq), msg(seq))
    assert.equal((await big.replayAfter('S', 'st', 'st.50000'))?.length, 49_999)
  })

  it('agrees with a naive model under random appends, drops and replays', async () => {
    // Tight enough that every cap bites often; replays aim mostly near the end so many succeed.
    const limits = { maxEventsPerStream: 6, maxStreamsPerSession: 3, maxBytesPerSession: 1200 }
    const outcomes = { unavailable: 0, empty: 0, events: 0 }
    for (const seed of [11, 12, 13, 14, 15]) {
      const random = rng(seed)
      const store = new MemoryEventStore(limits)
      const model = new ModelStore(limits)
      const nextSeq = new Map<string, number>()
      for (let step = 0; step < 4000; step++) {
        const session = `S${Math.floor(random() * 3)}`
        const stream = `s${Math.floor(random() * 4)}`
        const key = `${session}/${stream}`
        const roll = random()
        if (roll < 0.01) {
          store.dropSession(session)
          model.dropSession(session)
        } else if (roll < 0.7) {
          const seq = (nextSeq.get(key) ?? 0) + (random() < 0.2 ? 2 : 0)
          nextSeq.set(key, seq + 1)
          const message = msg(seq, 'y'.repeat(Math.floor(random() * 80)))
          store.append(session, stream, formatEventId(stream, seq), message)
          model.append(session, stream, seq, message)
        } else {
          const next = nextSeq.get(key) ?? 0
          const afterSeq = random() < 0.2 ? Math.floor(random() * (next + 2)) : Math.max(0, next - 1 - Math.floor(random() * 6))
          const id = formatEventId(stream, afterSeq)
          const replay = await store.replayAfter(session, stream, id)
          assert.deepEqual(replay, model.replayAfter(session, stream, afterSeq), `seed ${seed} step ${step} ${key} after ${afterSeq}`)
          outcomes[replay === undefined ? 'unavailable' : replay.length === 0 ? 'empty' : 'events']++
        }
      }
    }
    for (const [outcome, count] of Object.entries(outcomes)) assert.ok(count > 500, `${outcome}: ${count} of ${JSON.stringify(outcomes)}`)
  })
})

/** The specification of the store in the plainest code: linear scans everywhere. */
class ModelStore {
  private readonly sessions = new Map<string, { clock: number, streams: Map<string, ModelStream> }>()
  private readonly limits: MemoryEventStoreLimits
  constructor (limits: MemoryEventStoreLimits) { this.limits = limits }

  append (sessionId: string, streamId: string, seq: number, message: unknown): void {
    let session = this.sessions.get(sessionId)
    if (session === undefined) this.sessions.set(sessionId, session = { clock: 0, streams: new Map() })
    let stream = session.streams.get(streamId)
    session.streams.delete(streamId)
    if (stream === undefined && session.streams.size >= this.limits.maxStreamsPerSession) {
      session.streams.delete(session.streams.keys().next().value as string)
    }
    stream ??= { events: [], evictedThroughSeq: -1 }
    session.streams.set(streamId, stream)
    const json = JSON.stringify(message)
    stream.events.push({ seq, json, bytes: Buffer.byteLength(json), at: session.clock++ })
    if (stream.events.length > this.limits.maxEventsPerStream) stream.evictedThroughSeq = stream.events.shift()?.seq ?? -1
    const all = (): ModelStream[] => [...(session?.streams.values() ?? [])]
    while (all().reduce((sum, s) => sum + s.events.reduce((n, e) => n + e.bytes, 0), 0) > this.limits.maxBytesPerSession) {
      const oldest = all().filter(s => s.events.length > 0).sort((x, y) => (x.events[0]?.at ?? 0) - (y.events[0]?.at ?? 0))[0]
      if (oldest === undefined) break
      oldest.evictedThroughSeq = oldest.events.shift()?.seq ?? -1
    }
  }

  replayAfter (sessionId: string, streamId: string, afterSeq: number): StoredEvent[] | undefined {
    const stream = this.sessions.get(sessionId)?.streams.get(streamId)
    if (stream === undefined) return undefined
    const at = stream.events.findIndex(e => e.seq === afterSeq)
    if (at === -1 && afterSeq !== stream.evictedThroughSeq) return undefined
    return stream.events.slice(at + 1).map(e => ({ id: formatEventId(streamId, e.seq), message: JSON.parse(e.json) }))
  }

  dropSession (sessionId: string): void { this.sessions.delete(sessionId) }
}

interface ModelStream { events: Array<{ seq: number, json: string, bytes: number, at: number }>, evictedThroughSeq: number }
