// Command-line flags and environment: what the bench measures and for how long.
import path from 'node:path'
import { parseArgs } from 'node:util'
import { ROOT } from './common.ts'
import type { DriverKind } from './target.ts'

/** What --paths can select; groups expand to several. */
export const SELECTABLE = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'lean', 'supergateway', 'mcp-proxy', 'floor', 'hfloor', 'catalog', 'idle', 'large'] as const
export type Selectable = typeof SELECTABLE[number]
export type PathLetter = 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'g' | 'h' | 'i'
const GROUPS: Record<string, Selectable[]> = {
  all: [...SELECTABLE],
  direct: ['a', 'b'],
  scaling: ['lean'],
  peers: ['supergateway', 'mcp-proxy', 'floor', 'hfloor'],
  'scale-out': ['f', 'g', 'i'],
  // Path i with g, the same three replicas on one Redis: what the cluster changes.
  cluster: ['g', 'i']
}

/**
 * The drivers a selection runs on a path: a letter selects its path with every driver it has (SDK
 * and lean; f, g and i have the SDK client only); `lean` alone selects path c's lean driver (and its
 * scaling curve) without the SDK client.
 */
export function driversOf (paths: ReadonlySet<Selectable>, letter: PathLetter): DriverKind[] {
  const out: DriverKind[] = []
  if (paths.has(letter)) out.push('sdk')
  if (letter !== 'f' && letter !== 'g' && letter !== 'i' && (paths.has(letter) || (letter === 'c' && paths.has('lean')))) out.push('lean')
  return out
}

export interface Settings {
  reps: number
  warmup: number
  seqCalls: number
  concCalls: number
  concurrency: number[]
  /** In-flight levels of the lean driver on path c (the seq phase is the level 1). */
  scaling: number[]
  catalogSizes: number[]
  catalogWarmup: number
  catalogCalls: number
  catalogFullListings: number
  /** The idle section: how long RSS is sampled (once a second) at most, after ready and after the sessions. */
  idleSettleS: number
  /** Sessions opened (raw initialize POSTs) to measure memory per session. */
  idleSessions: number
  paths: Set<Selectable>
  callTimeoutMs: number
  limitMs: number
  quick: boolean
  jsonFile: string
  cpuProfDir?: string
}

const USAGE = `usage: npm run bench -- [--quick] [--paths LIST] [--reps N] [--warmup N] [--seq N] [--calls N] [--limit-s N] [--json FILE] [--cpu-prof-dir DIR]
  --quick          small counts, one repetition unless --reps is given (smoke run, ~4 min)
  --paths LIST     what to measure, comma-separated (default all):
                     a b c d e h     each path with both drivers, SDK client and lean (a, b direct; c gateway;
                                     d secured; e sessions in Redis; h gateway → Streamable HTTP upstream)
                     f g             HAProxy → 1 / 3 gateway replicas, sessions in one Redis (SDK client only)
                     i               HAProxy → 3 gateway replicas, sessions in a three-primary Redis Cluster (SDK client only)
                     lean            path c with the lean driver only, 16/64/256 in flight (the scaling curve; c includes it)
                     supergateway    the peer over Streamable HTTP and over SSE (SDK and lean drivers)
                     mcp-proxy       the peer over Streamable HTTP (SDK and lean drivers)
                     floor           bench/floor-proxy.mjs, a bare node:http → stdio proxy (lean driver): what any Node proxy pays
                     hfloor          bench/floor-http-proxy.mjs, a bare node:http → Streamable HTTP proxy (lean driver): the floor of path h
                     catalog         tools/list first page over 1k/10k/50k-tool catalogs
                     idle            idle RSS with 10 stdio upstreams, and memory per open session
                     large           a 3, 10 and 30 MB tool result: peak RSS growth, another session's echo meanwhile
                   groups: all, direct (a,b), peers (with floor, hfloor), scaling (lean), scale-out (f,g,i), cluster (g,i); e.g. --paths lean,peers
  --reps N         repetitions; paths are interleaved a,b,c,a,b,c,... (default 3; env BENCH_REPS)
  --warmup N       warm-up calls per path per repetition (default 500)
  --seq N          sequential calls measured for p50/p99 (default 1000)
  --calls N        calls per concurrent phase (default 3000; at least 4 × the in-flight level)
  --limit-s N      hard bound on the whole run; everything is stopped when it passes (default 1800)
  --json FILE      where the full results go (default .bench-results/latest.json)
  --cpu-prof-dir D run the gateway under node --cpu-prof, writing its .cpuprofile into D
env: BENCH_QUICK=1, BENCH_REPS=N, BENCH_GATEWAY_NODE_FLAGS="..." (replaces the gateway's V8 flags, for an A/B),
     BENCH_GATEWAY_MAIN=/path/to/dist/src/main.js (another build of the gateway, for a before/after)`

function positiveInt (value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === '') return undefined
  const n = Number(value)
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${value}`)
  return n
}

function parsePaths (list: string | undefined): Set<Selectable> {
  if (list === undefined) return new Set(SELECTABLE)
  const out = new Set<Selectable>()
  for (const raw of list.split(',')) {
    const word = raw.trim().toLowerCase()
    if (word === '') continue
    const group = GROUPS[word]
    if (group !== undefined) for (const s of group) out.add(s)
    else if ((SELECTABLE as readonly string[]).includes(word)) out.add(word as Selectable)
    else throw new Error(`--paths: unknown "${raw.trim()}" (one of ${[...SELECTABLE, ...Object.keys(GROUPS)].join(', ')})`)
  }
  if (out.size === 0) throw new Error('--paths selects nothing')
  return out
}

export function parseSettings (argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      paths: { type: 'string' },
      only: { type: 'string' },
      reps: { type: 'string' },
      warmup: { type: 'string' },
      seq: { type: 'string' },
      calls: { type: 'string' },
      'limit-s': { type: 'string' },
      json: { type: 'string' },
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
    scaling: [16, 64, 256],
    catalogSizes: [1_000, 10_000, 50_000],
    catalogWarmup: quick ? 20 : 100,
    catalogCalls: quick ? 100 : 300,
    catalogFullListings: quick ? 2 : 5,
    idleSettleS: 60,
    idleSessions: quick ? 2_000 : 10_000,
    // --only is an alias of --paths.
    paths: parsePaths(values.paths ?? values.only),
    callTimeoutMs: 10_000,
    limitMs: (positiveInt(values['limit-s'], '--limit-s') ?? 1800) * 1000,
    jsonFile: path.resolve(values.json ?? path.join(ROOT, '.bench-results', 'latest.json')),
    cpuProfDir: values['cpu-prof-dir'] === undefined ? undefined : path.resolve(values['cpu-prof-dir'])
  }
}
