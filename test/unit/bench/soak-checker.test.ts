import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Checker } from '../../../bench/soak/checker.ts'
import { buildReport } from '../../../bench/soak/report.ts'
import type { Exchange } from '../../../bench/soak/wire.ts'

const META = { date: '', commit: '', seconds: 10, sessions: 1, replicas: 3, node: '', loadMs: 10_000 }
const echoes = (token: string) => (r: Record<string, unknown>): boolean => (r.content as Array<{ text: string }>)[0]?.text === token

function answer (id: string, text: string): Exchange {
  return { kind: 'answer', events: [], message: { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } } }
}

test('the soak checker counts an answer with another request\'s id or token as crossed, never as an answer', () => {
  const c = new Checker()
  assert.ok(c.judge('echo', 'skabcd-1', answer('skabcd-1', 'skabcd-1'), echoes('skabcd-1'), 0))
  assert.equal(c.judge('echo', 'skabcd-2', answer('skabcd-3', 'skabcd-3'), echoes('skabcd-2'), 0), undefined)
  assert.equal(c.judge('echo', 'skabcd-4', answer('skabcd-4', 'skabcd-5'), echoes('skabcd-4'), 0), undefined)
  assert.equal(c.crossedCount, 2)
  assert.equal(c.answered, 1)
  assert.equal(c.strayMessage('progress', 'skabcd-6', { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'skabcd-7', progress: 1 } }), true)
  assert.equal(c.crossedCount, 3)
})

test('the soak checker tells an unanswered request from an error and classes errors by HTTP status, JSON-RPC code and SB_ERR code', () => {
  const c = new Checker()
  c.judge('echo', 't1', { kind: 'timeout', events: [] }, () => true, 0)
  c.judge('echo', 't2', { kind: 'http', status: 404, body: '{"error":{"code":-32001,"message":"Session not found"}}' }, () => true, 0)
  c.judge('echo', 't3', { kind: 'answer', events: [], message: { id: 't3', error: { code: -32602, message: 'Unknown tool: local__echo' } } }, () => true, 0)
  c.judge('echo', 't4', { kind: 'answer', events: [], message: { id: 't4', result: { isError: true, _meta: { 'switchboard/error': { code: 'SB_ERR_UPSTREAM_UNAVAILABLE' } } } } }, () => true, 0, '', 'web')
  assert.equal(c.unansweredCount, 1)
  assert.deepEqual([...c.errors.keys()].sort(), ['HTTP 404', 'JSON-RPC -32602 "Unknown tool"', 'isError SB_ERR_UPSTREAM_UNAVAILABLE [web]'])
})

test('the soak report joins errors less than a second apart into one window per fault, pins each unanswered request on the fault it met, and finds the longest silence', () => {
  const c = new Checker()
  c.unansweredSpans.push({ from: 4_500, to: 19_500 }, { from: 100, to: 1_000 }, { from: 6_000, to: 21_000 })
  c.okTimes.push(100, 200, 4_000, 9_900)
  // Errors every 500 ms from 2 s to 4 s (one window of 2,000 ms), then one alone at 6 s.
  for (const at of [2_000, 2_500, 3_000, 3_500, 4_000, 6_000]) c.errorTimes.push({ at, cls: 'HTTP 503' })
  const faults = [{ kind: 'redis-pause' as const, target: 'redis', at: 1_900, over: 3_900 }, { kind: 'replica-kill' as const, target: 'r0', at: 5_000, over: 5_500 }]
  const r = buildReport(c, faults, [], META)
  assert.equal(r.faults[0]?.longestWindow?.ms, 2_000)
  assert.equal(r.faults[0]?.longestWindow?.errors, 5)
  assert.equal(r.faults[1]?.longestWindow?.ms, 0)
  assert.deepEqual([r.beforeFirstFault.unanswered, r.faults[0]?.unansweredMet, r.faults[1]?.unansweredMet], [1, 0, 2])
  assert.equal(r.silence.longestNoAnswerMs, 3_900)
  assert.equal(r.silence.verdict, 'WARN')
  assert.equal(r.hard, 'PASS', 'the spans pushed by hand are not counted as unanswered')
})
