// The report's newer sections: the gateway against its peers (same driver, same upstream), the
// gateway's CPU per call as calls in flight grow, tools/list over big catalogs, and idle memory.
import { GATEWAY_PAGE_SIZE, type CatalogResult } from './catalog.ts'
import type { IdleResult, SettledRss } from './idle.ts'
import { treeLines } from './idle-tree.ts'
import { fmt, table, type PathSummary } from './summary.ts'
import type { PathId } from './target.ts'

const SEARCH_TARGET_P50_MS = 5

export interface PeerRatio {
  peer: string
  driver: string
  /** gateway ÷ peer; below 1 means the gateway is faster (p50) or cheaper (CPU, RSS). */
  seqP50: number
  cpuPerCall: number
  cpuPerCallC64: number
  peakRss: number
  /** gateway ÷ peer; above 1 means the gateway serves more calls per second. */
  c64CallsPerSec: number
}

/** For each peer path measured, the gateway path c with the same driver against it. */
export function peerRatios (summaries: PathSummary[]): PeerRatio[] {
  const out: PeerRatio[] = []
  for (const p of summaries.filter(s => s.role === 'peer')) {
    const g = summaries.find(s => s.path === (p.driver === 'lean' ? 'gateway-lean' : 'gateway'))
    if (g === undefined) continue
    out.push({
      peer: p.label,
      driver: p.driver,
      seqP50: g.seqP50Ms / p.seqP50Ms,
      cpuPerCall: (g.proxyCpuUsPerCall ?? Number.NaN) / (p.proxyCpuUsPerCall ?? Number.NaN),
      cpuPerCallC64: (g.byPhase.c64?.proxyCpuUs ?? Number.NaN) / (p.byPhase.c64?.proxyCpuUs ?? Number.NaN),
      peakRss: (g.proxyPeakRssMb ?? Number.NaN) / (p.proxyPeakRssMb ?? Number.NaN),
      c64CallsPerSec: g.c64CallsPerSec / p.c64CallsPerSec
    })
  }
  return out
}

export function peersSection (ratios: PeerRatio[], problems: string[]): string[] {
  const out: string[] = []
  if (ratios.length > 0) {
    out.push('gateway (c) ÷ peer, same driver     CPU and RSS: below 1 = the gateway spends less; calls/s: above 1 = the gateway serves more')
    out.push(table(
      ['peer', 'driver', 'seq p50', 'c64 calls/s', 'proxy CPU µs/call', 'proxy CPU at c64', 'peak RSS'],
      ratios.map(r => [r.peer, r.driver, fmt(r.seqP50, 2), fmt(r.c64CallsPerSec, 2), fmt(r.cpuPerCall, 2), fmt(r.cpuPerCallC64, 2), fmt(r.peakRss, 2)])
    ))
  }
  for (const p of problems) out.push(`!!! PEER NOT MEASURED: ${p}`)
  return out
}

/** The floor a proxy is measured against: the HTTP floor for path h (and itself), the stdio floor for the rest. */
export function floorOf (path: PathId): PathId {
  return path === 'gateway-http-lean' || path === 'floor-http-lean' ? 'floor-http-lean' : 'floor-lean'
}

/**
 * Every proxy against its floor at c64 with the lean driver: bench/floor-proxy.mjs for the proxies
 * to a stdio upstream, bench/floor-http-proxy.mjs for path h (a Streamable HTTP upstream); how much
 * of its CPU per call any Node proxy over the same HTTP and pipe (or upstream HTTP) pays, and how
 * much is its own work.
 */
export function floorSection (summaries: PathSummary[]): string[] {
  const c64Cpu = (path: PathId): number | undefined => summaries.find(s => s.path === path)?.byPhase.c64?.proxyCpuUs
  const floors = (['floor-lean', 'floor-http-lean'] as const).filter(id => c64Cpu(id) !== undefined)
  if (floors.length === 0) return []
  const proxies = summaries.filter(s => s.driver === 'lean' && (s.role === 'gateway' || s.role === 'peer' || s.role === 'floor'))
  const named = (id: PathId): string => summaries.find(s => s.path === id)?.label ?? ''
  return [
    `the floor at c64, lean driver: ${floors.map(named).join('; ')}; what each proxy spends per call above its floor (to stdio, or to HTTP for path h) is its own work`,
    table(['proxy', 'floor', 'c64 calls/s', 'proxy CPU µs/call at c64', 'above the floor µs', '÷ floor', 'peak RSS MiB at c64'],
      proxies.map(s => {
        const cpu = s.byPhase.c64?.proxyCpuUs ?? Number.NaN
        const floor = floorOf(s.path)
        const floorCpu = c64Cpu(floor) ?? Number.NaN
        return [s.label, floor === 'floor-lean' ? 'stdio' : 'HTTP', fmt(s.c64CallsPerSec, 0), fmt(cpu, 1), fmt(cpu - floorCpu, 1), fmt(cpu / floorCpu, 2), fmt(s.byPhase.c64?.peakRssMb, 1)]
      }))
  ]
}

/** The lean driver on path c: the seq phase is 1 in flight, then each concurrency level. */
export function scalingSection (lean: PathSummary | undefined): string[] {
  if (lean === undefined) return []
  const rows = Object.entries(lean.byPhase).map(([name, p]) => [name === 'seq' ? '1' : name.slice(1), fmt(p.callsPerSec, 0), fmt(p.p50Ms, 3), fmt(p.proxyCpuUs, 1), fmt(p.upstreamCpuUs, 1), fmt(p.driverCpuUs, 1)])
  return [
    'gateway CPU per call by calls in flight (path c, lean driver)',
    table(['in flight', 'calls/s', 'p50 ms', 'gateway CPU µs/call', 'upstream CPU µs/call', 'driver CPU µs/call'], rows)
  ]
}

export function catalogSection (results: CatalogResult[], problems: string[]): string[] {
  const out: string[] = []
  if (results.length > 0) {
    out.push(`tools/list through the gateway over big catalogs (lean driver, first page of ${GATEWAY_PAGE_SIZE}, sequential after warm-up)`)
    out.push(table(
      ['tools', 'first page p50 ms', 'p99 ms', 'lists/s', 'gateway CPU µs/list', 'whole listing p50 ms', 'pages', 'ready s', 'gateway peak RSS MiB', 'failures'],
      results.map(r => [String(r.tools), fmt(r.firstPage.p50Ms, 2), fmt(r.firstPage.p99Ms, 2), fmt(r.firstPage.listsPerSec, 0), fmt(r.firstPage.gatewayCpuUsPerList, 0),
        fmt(r.fullListing.p50Ms, 1), String(r.fullListing.pages), fmt(r.readyMs / 1000, 1), fmt(r.gatewayPeakRssMb, 1), String(r.firstPage.failures)])
    ))
  }
  const searched = results.filter(r => r.search !== undefined)
  if (searched.length > 0) {
    out.push('', `search_tools through the gateway over the same catalogs (a discovery: search endpoint, lean driver, limit 10, sequential after warm-up; target: p50 ≤ ${SEARCH_TARGET_P50_MS} ms at 10,000 tools)`)
    out.push(table(
      ['tools', 'search p50 ms', 'p99 ms', 'gateway CPU µs/search', 'failures'],
      searched.map(r => [String(r.tools), fmt(r.search?.p50Ms, 2), fmt(r.search?.p99Ms, 2), fmt(r.search?.gatewayCpuUsPerSearch, 0), String(r.search?.failures ?? 0)])
    ))
  }
  for (const p of problems) out.push(`!!! ${p}`)
  return out
}

export function idleSection (idle: IdleResult | undefined): string[] {
  if (idle === undefined) return []
  const out: string[] = ['idle memory (gateway VmRSS once a second; settled: the lowest of 5 samples after V8\'s memory reducer ran)']
  const fell = (r: SettledRss | undefined): string => r === undefined ? '' : r.reducerAtS === undefined ? ' (memory reducer did NOT run: not settled)' : ` (reducer ran at ${fmt(r.reducerAtS, 0)} s)`
  const u = idle.upstreams
  if (u !== undefined) {
    out.push(`  ${u.upstreams} stdio upstreams (${u.server}): ${fmt(u.rssAtReadyMb, 1)} MiB when /readyz turned 200, settled ${fmt(u.settled?.mb, 1)} MiB at ${fmt(u.settled?.atS, 0)} s after ready${fell(u.settled)}`)
    out.push(`    per second from ${fmt(u.samplesFromS, 0)} s after ready: ${u.samplesMb.map(x => x.toFixed(0)).join(' ')}`)
  }
  const s = idle.sessions
  if (s !== undefined) {
    out.push(`  ${s.opened} of ${s.requested} sessions opened in ${fmt(s.openS, 1)} s (1 upstream): settled ${fmt(s.before?.mb, 1)} MiB before${fell(s.before)}, ${fmt(s.after?.mb, 1)} MiB after (at ${fmt(s.after?.atS, 0)} s)${fell(s.after)}: ${fmt(s.perSessionKb, 2)} KiB per session`)
    out.push(`    per second after: ${s.samplesAfterMb.map(x => x.toFixed(0)).join(' ')}`)
  }
  out.push(...treeLines(idle.trees))
  for (const p of idle.problems) out.push(`!!! ${p}`)
  return out
}
