// Each replica's resident memory (VmRSS from /proc/<pid>/status), sampled every second together with
// the number of requests the soak has sent so far, and its slope in MB per 100k requests: a least
// squares fit over the life of each process, its first fifth left out (start-up and JIT warm-up).
import { readFileSync } from 'node:fs'

export interface RssSample { at: number, requests: number, mb: number }
export interface RssLife { name: string, pid: number, samples: RssSample[] }
export interface RssSlope { name: string, pid: number, samples: number, requests: number, firstMb: number, lastMb: number, peakMb: number, mbPer100k: number | undefined }

const WARMUP_FRACTION = 0.2
const MIN_REQUESTS_FOR_SLOPE = 2_000
/** Below this, one garbage collection (±10 MB) moves the slope by more than the target: the slope is shown, not judged. */
export const MIN_REQUESTS_FOR_VERDICT = 20_000

export function vmRssMb (pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m?.[1] === undefined ? undefined : Number(m[1]) / 1024
  } catch {
    return undefined
  }
}

export class RssSampler {
  readonly lives: RssLife[] = []

  sample (replicas: Array<{ name: string, pid: number }>, at: number, requests: number): void {
    for (const { name, pid } of replicas) {
      const mb = vmRssMb(pid)
      if (mb === undefined) continue
      let life = this.lives.find(l => l.pid === pid)
      if (life === undefined) {
        life = { name, pid, samples: [] }
        this.lives.push(life)
      }
      life.samples.push({ at, requests, mb })
    }
  }

  /** Per replica, the slope of the process that lived through the most requests. */
  slopes (): RssSlope[] {
    const byName = new Map<string, RssSlope>()
    for (const life of this.lives) {
      const slope = slopeOf(life)
      const best = byName.get(life.name)
      if (best === undefined || slope.requests > best.requests) byName.set(life.name, slope)
    }
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name))
  }
}

function slopeOf (life: RssLife): RssSlope {
  const s = life.samples
  const used = s.slice(Math.floor(s.length * WARMUP_FRACTION))
  const requests = (used.at(-1)?.requests ?? 0) - (used[0]?.requests ?? 0)
  const base = { name: life.name, pid: life.pid, samples: s.length, requests: (s.at(-1)?.requests ?? 0) - (s[0]?.requests ?? 0), firstMb: round(s[0]?.mb ?? 0), lastMb: round(s.at(-1)?.mb ?? 0), peakMb: round(Math.max(...s.map(x => x.mb))) }
  if (used.length < 3 || requests < MIN_REQUESTS_FOR_SLOPE) return { ...base, mbPer100k: undefined }
  const n = used.length
  const mx = used.reduce((a, x) => a + x.requests, 0) / n
  const my = used.reduce((a, x) => a + x.mb, 0) / n
  let num = 0
  let den = 0
  for (const x of used) {
    num += (x.requests - mx) * (x.mb - my)
    den += (x.requests - mx) ** 2
  }
  return { ...base, mbPer100k: den === 0 ? undefined : round(num / den * 100_000) }
}

function round (x: number): number {
  return Math.round(x * 10) / 10
}
