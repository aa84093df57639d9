// Medians per path over the repetitions, and the plain-text table layout the report uses.
import type { PhaseResult, RepResult } from './phase.ts'
import { median } from './stats.ts'
import type { DriverKind, PathId, Role, Target } from './target.ts'

export interface PhaseSummary {
  callsPerSec: number
  p50Ms: number
  proxyCpuUs?: number
  upstreamCpuUs?: number
  driverCpuUs: number
  /** The proxy's peak RSS during this phase (VmHWM reset just before it), MiB; the highest over the repetitions. */
  peakRssMb?: number
}

export interface PathSummary {
  path: PathId
  label: string
  role: Role
  driver: DriverKind
  seqP50Ms: number
  seqP99Ms: number
  c16CallsPerSec: number
  c64CallsPerSec: number
  /** Every measured phase by name (seq, c16, c64, and c256 on the scaling path), medians. */
  byPhase: Record<string, PhaseSummary>
  /** The proxy's (gateway's or peer's) CPU per call over seq and the run's concurrency levels. */
  proxyCpuUsPerCall?: number
  proxyMainThreadCpuUsPerCall?: number
  upstreamCpuUsPerCall?: number
  /** The Redis processes' CPU per call (paths with sessions in Redis). */
  redisCpuUsPerCall?: number
  driverCpuUsPerCall: number
  proxyPeakRssMb?: number
  failures: number
}

function failuresOf (r: RepResult): number {
  return r.warmupFailures + r.seq.failures + Object.values(r.conc).reduce((k, p) => k + p.failures, 0)
}

/** The highest of the values given (KiB), in MiB; undefined when there are none. */
function maxMb (kb: Array<number | undefined>): number | undefined {
  const known = kb.filter((x): x is number => x !== undefined)
  return known.length === 0 ? undefined : Math.max(...known) / 1024
}

export function summarize (t: Target, reps: RepResult[]): PathSummary {
  const m = (f: (r: RepResult) => number | undefined): number => median(reps.map(f).filter((x): x is number => x !== undefined))
  const opt = (f: (r: RepResult) => number | undefined): number | undefined => {
    const v = m(f)
    return Number.isFinite(v) ? v : undefined
  }
  const phaseNames = ['seq', ...Object.keys(reps[0]?.conc ?? {})]
  const phaseOf = (r: RepResult, name: string): PhaseResult | undefined => name === 'seq' ? r.seq : r.conc[name]
  const byPhase: Record<string, PhaseSummary> = {}
  for (const name of phaseNames) {
    byPhase[name] = {
      callsPerSec: m(r => phaseOf(r, name)?.callsPerSec),
      p50Ms: m(r => phaseOf(r, name)?.p50Ms),
      proxyCpuUs: opt(r => phaseOf(r, name)?.proxyCpuUs),
      upstreamCpuUs: opt(r => phaseOf(r, name)?.upstreamCpuUs),
      driverCpuUs: m(r => phaseOf(r, name)?.driverCpuUs),
      peakRssMb: maxMb(reps.map(r => phaseOf(r, name)?.peakRssKb))
    }
  }
  return {
    path: t.id,
    label: t.label,
    role: t.role,
    driver: t.driver.kind,
    seqP50Ms: m(r => r.seq.p50Ms),
    seqP99Ms: m(r => r.seq.p99Ms),
    c16CallsPerSec: m(r => r.conc.c16?.callsPerSec),
    c64CallsPerSec: m(r => r.conc.c64?.callsPerSec),
    byPhase,
    proxyCpuUsPerCall: opt(r => r.proxyCpuUsPerCall),
    proxyMainThreadCpuUsPerCall: opt(r => r.proxyMainThreadCpuUsPerCall),
    upstreamCpuUsPerCall: opt(r => r.upstreamCpuUsPerCall),
    redisCpuUsPerCall: opt(r => r.redisCpuUsPerCall),
    driverCpuUsPerCall: m(r => r.driverCpuUsPerCall),
    proxyPeakRssMb: maxMb(reps.map(r => r.proxyPeakRssKb)),
    failures: reps.reduce((n, r) => n + failuresOf(r), 0)
  }
}

export const fmt = (x: number | undefined, digits: number): string => x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits)

/** Columns padded to their widest cell; the first left-aligned, the rest right-aligned unless `left` names them. */
export function table (header: string[], rows: string[][], left: number[] = [0]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map(r => (r[i] ?? '').length)))
  const line = (cells: string[]): string => cells.map((c, i) => left.includes(i) ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)).join('  ').trimEnd()
  return [line(header), widths.map(w => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}
