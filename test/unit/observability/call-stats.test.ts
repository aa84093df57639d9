import { it } from 'node:test'
import assert from 'node:assert/strict'
import { CallFeed } from '../../../src/observability/call-feed.ts'
import { CallStats, STATS_WINDOW_MINUTES } from '../../../src/observability/call-stats.ts'

const MINUTE = 60_000
/** A fixed start on a minute boundary. */
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE)

function clockAt (start: number): { now: () => number, advance: (ms: number) => void } {
  let t = start
  return { now: () => t, advance: (ms) => { t += ms } }
}

it('counts calls and errors (any outcome but ok) of the current minute per upstream', () => {
  const clock = clockAt(T0 + 5_000)
  const stats = new CallStats({ clock: clock.now })
  stats.record({ upstream: 'fs', outcome: 'ok', durationMs: 3 })
  stats.record({ upstream: 'fs', outcome: 'tool_error', durationMs: 4 })
  stats.record({ upstream: 'fs', outcome: 'timeout', durationMs: 4 })
  stats.record({ upstream: 'web', outcome: 'ok', durationMs: 20 })
  const { windowMinutes, upstreams } = stats.snapshot()
  assert.equal(windowMinutes, 15)
  assert.deepEqual(upstreams.map(u => u.upstream), ['fs', 'web'])
  const last = upstreams[0]?.minutes.at(-1)
  assert.deepEqual(last, { at: T0, calls: 3, errors: 2, p95Ms: 4 })
  assert.deepEqual(upstreams[1]?.minutes.at(-1), { at: T0, calls: 1, errors: 0, p95Ms: 20 })
})

it('rolls over to a fresh bucket each minute and keeps the window at 15 minutes, oldest first', () => {
  const clock = clockAt(T0)
  const stats = new CallStats({ clock: clock.now })
  for (let m = 0; m < 20; m++) {
    for (let i = 0; i <= m; i++) stats.record({ upstream: 'fs', outcome: 'ok', durationMs: 1 })
    if (m < 19) clock.advance(MINUTE)
  }
  const minutes = stats.snapshot().upstreams[0]?.minutes ?? []
  assert.equal(minutes.length, STATS_WINDOW_MINUTES)
  // Minute m had m + 1 calls; the window holds minutes 5..19.
  assert.deepEqual(minutes.map(m => m.calls), Array.from({ length: 15 }, (_, i) => i + 6))
  assert.deepEqual(minutes.map(m => m.at), Array.from({ length: 15 }, (_, i) => T0 + (i + 5) * MINUTE))
})

it('shows idle minutes as zero, and a slot whose minute came round again starts from zero', () => {
  const clock = clockAt(T0)
  const stats = new CallStats({ clock: clock.now })
  stats.record({ upstream: 'fs', outcome: 'ok', durationMs: 1 })
  stats.record({ upstream: 'fs', outcome: 'ok', durationMs: 1 })
  clock.advance(3 * MINUTE)
  stats.record({ upstream: 'fs', outcome: 'upstream_error', durationMs: 1 })
  let minutes = stats.snapshot().upstreams[0]?.minutes ?? []
  assert.deepEqual(minutes.slice(-4).map(m => [m.calls, m.errors, m.p95Ms]), [[2, 0, 1], [0, 0, null], [0, 0, null], [1, 1, 1]])
  // Exactly 15 minutes after the first call the same slot is used again: the old counts are gone.
  clock.advance(12 * MINUTE)
  stats.record({ upstream: 'fs', outcome: 'ok', durationMs: 1 })
  minutes = stats.snapshot().upstreams[0]?.minutes ?? []
  assert.equal(minutes.at(-1)?.calls, 1)
  assert.equal(minutes.reduce((n, m) => n + m.calls, 0), 2, 'the first minute left the window')
  // Long idle: everything reads zero.
  clock.advance(60 * MINUTE)
  assert.ok(stats.snapshot().upstreams[0]?.minutes.every(m => m.calls === 0 && m.p95Ms === null))
})

it('takes p95 from the latency buckets: the bound of the bucket holding the 95th call, never above the slowest call', () => {
  const clock = clockAt(T0)
  const stats = new CallStats({ clock: clock.now })
  // 95 fast calls (bucket ≤ 10 ms) and 5 slow ones (bucket ≤ 1000 ms): the 95th is fast.
  for (let i = 0; i < 95; i++) stats.record({ upstream: 'a', outcome: 'ok', durationMs: 7 })
  for (let i = 0; i < 5; i++) stats.record({ upstream: 'a', outcome: 'ok', durationMs: 700 })
  // 90 fast, 10 slow: the 95th is slow.
  for (let i = 0; i < 90; i++) stats.record({ upstream: 'b', outcome: 'ok', durationMs: 7 })
  for (let i = 0; i < 10; i++) stats.record({ upstream: 'b', outcome: 'ok', durationMs: 700 })
  // Beyond the last bound: the slowest call seen.
  stats.record({ upstream: 'c', outcome: 'ok', durationMs: 90_000 })
  const byName = new Map(stats.snapshot().upstreams.map(u => [u.upstream, u.minutes.at(-1)?.p95Ms]))
  assert.equal(byName.get('a'), 10)
  assert.equal(byName.get('b'), 700)
  assert.equal(byName.get('c'), 90_000)
})

it('counts at most maxUpstreams upstreams; calls of others and of no upstream are not counted', () => {
  const stats = new CallStats({ clock: () => T0, maxUpstreams: 2 })
  stats.record({ upstream: 'one', outcome: 'ok', durationMs: 1 })
  stats.record({ upstream: 'two', outcome: 'ok', durationMs: 1 })
  stats.record({ upstream: 'three', outcome: 'ok', durationMs: 1 })
  stats.record({ upstream: '', outcome: 'unknown_tool', durationMs: 1 })
  stats.record({ upstream: 'one', outcome: 'ok', durationMs: 1 })
  assert.equal(stats.size, 2)
  const snapshot = stats.snapshot()
  assert.deepEqual(snapshot.upstreams.map(u => u.upstream), ['one', 'two'])
  assert.equal(snapshot.upstreams[0]?.minutes.at(-1)?.calls, 2)
})

it('lists known upstreams before their first call, and follows a CallFeed until told to stop', () => {
  const feed = new CallFeed()
  const stats = new CallStats({ clock: () => T0, known: () => ['idle', 'busy'] })
  const stop = stats.follow(feed)
  const event = { callId: '1', at: T0, principal: 'alice', endpoint: undefined, tool: 'echo', upstream: 'busy', outcome: 'ok' as const, durationMs: 2 }
  feed.publish(event)
  stop()
  feed.publish(event)
  const { upstreams } = stats.snapshot()
  assert.deepEqual(upstreams.map(u => [u.upstream, u.minutes.reduce((n, m) => n + m.calls, 0)]), [['busy', 1], ['idle', 0]])
  assert.equal(feed.listening, 0)
})
