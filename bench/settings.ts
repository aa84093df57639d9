// Command-line flags and environment: what the bench measures and for how long.
import path from 'node:path'
import { parseArgs } from 'node:util'

export interface Settings {
  reps: number
  warmup: number
  seqCalls: number
  concCalls: number
  concurrency: number[]
  callTimeoutMs: number
  limitMs: number
  quick: boolean
  cpuProfDir?: string
}

const USAGE = `usage: npm run bench -- [--quick] [--reps N] [--warmup N] [--seq N] [--calls N] [--limit-s N] [--cpu-prof-dir DIR]
  --quick          small counts, one repetition unless --reps is given (smoke run, ~20 s)
  --reps N         repetitions; paths are interleaved a,b,c,a,b,c,... (default 3; env BENCH_REPS)
  --warmup N       warm-up calls per path per repetition (default 500)
  --seq N          sequential calls measured for p50/p99 (default 1000)
  --calls N        calls per concurrent phase, 16 and 64 in flight (default 3000)
  --limit-s N      hard bound on the whole run; everything is stopped when it passes (default 600)
  --cpu-prof-dir D run the gateway under node --cpu-prof, writing its .cpuprofile into D
env: BENCH_QUICK=1, BENCH_REPS=N`

function positiveInt (value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${value}`)
  return n
}

export function parseSettings (argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      reps: { type: 'string' },
      warmup: { type: 'string' },
      seq: { type: 'string' },
      calls: { type: 'string' },
      'limit-s': { type: 'string' },
      'cpu-prof-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help === true) {
    process.stdout.write(USAGE + '\n')
    process.exit(0)
  }
  const quick = values.quick === true || process.env.BENCH_QUICK === '1'
  const reps = positiveInt(values.reps, '--reps') ?? positiveInt(process.env.BENCH_REPS, 'BENCH_REPS') ?? (quick ? 1 : 3)
  return {
    quick,
    reps,
    warmup: positiveInt(values.warmup, '--warmup') ?? (quick ? 100 : 500),
    seqCalls: positiveInt(values.seq, '--seq') ?? (quick ? 200 : 1000),
    concCalls: positiveInt(values.calls, '--calls') ?? (quick ? 500 : 3000),
    concurrency: [16, 64],
    callTimeoutMs: 10_000,
    limitMs: (positiveInt(values['limit-s'], '--limit-s') ?? 600) * 1000,
    cpuProfDir: values['cpu-prof-dir'] === undefined ? undefined : path.resolve(values['cpu-prof-dir'])
  }
}
