import { test } from 'node:test'
import assert from 'node:assert/strict'
import { judge } from '../../../bench/judge.ts'
import type { LargeResult } from '../../../bench/large-result.ts'
import { floorSection } from '../../../bench/report-sections.ts'
import type { Selectable } from '../../../bench/settings.ts'
import type { PathSummary } from '../../../bench/summary.ts'
import type { PathId, Role } from '../../../bench/target.ts'
import { evaluateTargets29 } from '../../../bench/targets-29.ts'

/** A path's summary with only what the targets read: CPU per call, calls/s and peak RSS at c64, seq p50. */
function summary (path: PathId, role: Role, c64: { cpu: number, calls: number }, more: { seqP50Ms?: number, rssMb?: number } = {}): PathSummary {
  const phase = { callsPerSec: c64.calls, p50Ms: 1, proxyCpuUs: c64.cpu, driverCpuUs: 50, peakRssMb: more.rssMb }
  return {
    path,
    label: path,
    role,
    driver: path.endsWith('-lean') ? 'lean' : 'sdk',
    seqP50Ms: more.seqP50Ms ?? 0.3,
    seqP99Ms: 1,
    c16CallsPerSec: c64.calls,
    c64CallsPerSec: c64.calls,
    byPhase: { c64: phase },
    proxyCpuUsPerCall: c64.cpu,
    proxyPeakRssMb: more.rssMb === undefined ? undefined : more.rssMb + 30,
    driverCpuUsPerCall: 50,
    failures: 0
  }
}

const run = (mb: number, callMs: number, growthRatio: number, echoP99Ms: number): LargeResult['runs'][number] =>
  ({ mb, peakGrowthMb: growthRatio * mb, growthRatio, callMs, echoCalls: 100, echoP50Ms: 1, echoP99Ms, echoMaxMs: echoP99Ms })

const summaries = [
  summary('direct-stdio-lean', 'direct', { cpu: Number.NaN, calls: 40_000 }, { seqP50Ms: 0.1 }),
  summary('gateway', 'gateway', { cpu: 90, calls: 1600 }),
  summary('gateway-lean', 'gateway', { cpu: 45, calls: 12_000 }, { seqP50Ms: 0.4, rssMb: 120 }),
  summary('gateway-secured-lean', 'gateway', { cpu: 50, calls: 11_000 }),
  summary('gateway-http-lean', 'gateway', { cpu: 140, calls: 3000 }),
  summary('haproxy-3', 'gateway', { cpu: 100, calls: 1300 }),
  summary('supergateway-sse', 'peer', { cpu: 120, calls: 900 }),
  summary('floor-lean', 'floor', { cpu: 40, calls: 15_000 }, { rssMb: 80 }),
  summary('floor-http-lean', 'floor', { cpu: 100, calls: 3500 })
]

test('issue 29\'s targets are judged as ratios within the run, against the floor of each path', () => {
  const paths = new Set<Selectable>(['a', 'c', 'd', 'g', 'h', 'supergateway', 'floor', 'hfloor', 'large'])
  const large: LargeResult = { runs: [run(10, 100, 1.5, 20), run(30, 360, 2.5, 60)], problems: [] }
  const t = evaluateTargets29({ paths, summaries, large })
  const verdict = (key: string): string | undefined => t[key]?.verdict
  assert.equal(t.cpuOverFloor_c?.value, 45 / 40)
  assert.equal(verdict('cpuOverFloor_c'), 'met')
  assert.equal(verdict('cpuOverFloor_d'), 'met')
  assert.equal(verdict('callsOverFloor_c'), 'NOT met')
  assert.equal(t.cpuOverSupergatewaySse_sdk?.value, 90 / 120)
  assert.equal(verdict('cpuOverSupergatewaySse_sdk'), 'NOT met')
  // h against the HTTP floor, not the stdio one.
  assert.equal(t.cpuOverHttpFloor_h?.value, 140 / 100)
  assert.equal(verdict('cpuOverHttpFloor_h'), 'NOT met')
  assert.equal(t.cpuThreeReplicasOverOne_sdk?.value, 100 / 90)
  assert.equal(verdict('cpuThreeReplicasOverOne_sdk'), 'met')
  assert.equal(verdict('largeGrowth'), 'NOT met')
  assert.equal(verdict('largeEchoP99'), 'NOT met')
  // 12 ms per MB at 30 MB against 10 at 10 MB.
  assert.equal(t.largeLinear?.value, 1.2)
  assert.equal(verdict('largeLinear'), 'met')
  assert.equal(t.peakRssOverFloor_c?.value, 1.5)
  assert.equal(verdict('peakRssOverFloor_c'), 'NOT met')
  assert.ok(Math.abs((t.addedP50_lean?.value ?? Number.NaN) - 0.3) < 1e-9)
  assert.equal(verdict('addedP50_lean'), 'NOT met')
  assert.equal(verdict('idleRss10Upstreams'), 'not measured (path idle not selected)')
})

test('a target whose paths are not selected is not measured, and says which is missing', () => {
  const t = evaluateTargets29({ paths: new Set<Selectable>(['lean', 'h']), summaries })
  assert.equal(t.cpuOverFloor_c?.verdict, 'not measured (path floor not selected)')
  assert.equal(t.cpuOverHttpFloor_h?.verdict, 'not measured (path hfloor not selected)')
  assert.equal(t.cpuThreeReplicasOverOne_sdk?.verdict, 'not measured (path g not selected)')
  assert.equal(t.largeGrowth?.verdict, 'not measured (path large not selected)')
  assert.equal(t.cpuOverFloor_c?.met, undefined)
})

test('the shared judge reads ≥ limits, and a selected path without a result is "no result"', () => {
  const spec = { target: 't', limit: 0.85, unit: '×', digits: 2, needs: [] }
  const t = judge(new Set(), [
    { ...spec, key: 'high', cmp: '≥', value: () => 0.9 },
    { ...spec, key: 'low', cmp: '≥', value: () => 0.8 },
    { ...spec, key: 'none', cmp: '≤', value: () => undefined }
  ])
  assert.equal(t.high?.verdict, 'met')
  assert.equal(t.high?.limit, '≥ 0.85 ×')
  assert.equal(t.low?.verdict, 'NOT met')
  assert.equal(t.none?.verdict, 'not measured (no result; see the log)')
})

test('the floor table divides path h by the HTTP floor and the other proxies by the stdio floor', () => {
  const text = floorSection(summaries).join('\n')
  const row = (path: string): string[] => text.split('\n').find(line => line.startsWith(path + ' '))?.trim().split(/\s+/) ?? []
  assert.deepEqual(row('gateway-http-lean').slice(1), ['HTTP', '3000', '140.0', '40.0', '1.40', '-'])
  assert.deepEqual(row('gateway-lean').slice(1), ['stdio', '12000', '45.0', '5.0', '1.13', '120.0'])
  assert.deepEqual(row('floor-http-lean').slice(1), ['HTTP', '3500', '100.0', '0.0', '1.00', '-'])
})
