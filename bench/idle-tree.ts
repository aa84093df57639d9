// The idle section's process trees (issue 30): the RSS of the gateway plus every process under it
// (its stdio upstreams), for the gateway alone, with ten eager upstreams, and with ten lazy ones
// (started once to learn their catalogs, then stopped). Target: lazy and idle ≤ 1.5× the gateway
// alone. Each tree: VmRSS summed over its processes once a second (pages shared between processes,
// such as node's own code, count once per process), the lowest of the last samples.
import { sleep } from './common.ts'
import { startGatewayProcess, type StartedGateway, type StdioUpstreamSpec } from './gateway.ts'
import { onCleanup } from './lifecycle.ts'
import { statusKb, treeOf } from './proc.ts'
import type { Settings } from './settings.ts'

export const TREE_TARGET_RATIO = 1.5
const SAMPLES = 8
/** A lazy gateway learning its catalogs: each upstream is started once, then stopped. */
const LEARN_LIMIT_S = 120
const KIB_PER_MIB = 1024

export interface TreeRss { processes: number, mb: number, samplesMb: number[] }

export interface ProcessTreesResult {
  alone?: TreeRss
  eager?: TreeRss
  lazy?: TreeRss
  /** lazy ÷ alone, and whether it is within TREE_TARGET_RATIO. */
  ratio?: number
  met?: boolean
  problems: string[]
}

type Kind = 'alone' | 'eager' | 'lazy'
export interface TreesRun { gateways: Partial<Record<Kind, StartedGateway>>, problems: string[] }

function treeKb (pid: number): { kb: number, processes: number } {
  const pids = treeOf(pid)
  return { kb: pids.reduce((sum, p) => sum + (statusKb(p, 'VmRSS') ?? 0), 0), processes: pids.length }
}

/** Starts the three gateways at the beginning of the run, beside the other idle ones. */
export async function startTrees (settings: Settings, tmpDir: string, upstreams: StdioUpstreamSpec[]): Promise<TreesRun> {
  const problems: string[] = []
  const plans: Array<[Kind, StdioUpstreamSpec[], string[]]> = [
    ['alone', [], ['']],
    ['eager', upstreams, ['']],
    // The pins (and so the lazy upstreams' listings) sit beside this config file.
    ['lazy', upstreams, ['upstreamDefaults: { start: lazy }']]
  ]
  const started = await Promise.allSettled(plans.map(async ([kind, list, extra]) => {
    const gw = await startGatewayProcess(settings, tmpDir, { file: `switchboard-bench-tree-${kind}.yaml`, upstreams: list, extra, upstreamProcess: kind === 'eager' })
    onCleanup(`switchboard tree ${kind}`, gw.stop)
    return [kind, gw] as const
  }))
  const gateways: TreesRun['gateways'] = {}
  started.forEach((r, i) => {
    if (r.status === 'fulfilled') gateways[r.value[0]] = r.value[1]
    else problems.push(`process tree (${plans[i]?.[0] ?? '?'}) NOT measured: ${r.reason instanceof Error ? r.reason.message.split('\n')[0] as string : String(r.reason)}`)
  })
  return { gateways, problems }
}

/** Waits for the lazy gateway to stop the upstreams it learned from, samples the three trees, stops them. */
export async function finishTrees (run: TreesRun): Promise<ProcessTreesResult> {
  const { gateways, problems } = run
  const lazy = gateways.lazy
  if (lazy !== undefined) {
    let waited = 0
    while (treeOf(lazy.pid).length > 1 && waited++ < LEARN_LIMIT_S) await sleep(1000)
    if (treeOf(lazy.pid).length > 1) problems.push(`lazy gateway still runs ${treeOf(lazy.pid).length - 1} upstream process(es) after ${LEARN_LIMIT_S} s`)
  }
  const samples: Partial<Record<Kind, Array<{ kb: number, processes: number }>>> = {}
  for (let i = 0; i < SAMPLES; i++) {
    for (const [kind, gw] of Object.entries(gateways) as Array<[Kind, StartedGateway]>) (samples[kind] ??= []).push(treeKb(gw.pid))
    await sleep(1000)
  }
  const result: ProcessTreesResult = { problems }
  for (const [kind, list] of Object.entries(samples) as Array<[Kind, Array<{ kb: number, processes: number }>]>) {
    const low = list.slice(-5).reduce((a, b) => b.kb < a.kb ? b : a)
    result[kind] = { processes: low.processes, mb: low.kb / KIB_PER_MIB, samplesMb: list.map(s => s.kb / KIB_PER_MIB) }
  }
  if (result.lazy !== undefined && result.alone !== undefined) {
    result.ratio = result.lazy.mb / result.alone.mb
    result.met = result.ratio <= TREE_TARGET_RATIO
  }
  await Promise.all(Object.values(gateways).map(async gw => { await gw.stop() }))
  return result
}

/** The report's lines for the trees. */
export function treeLines (trees: ProcessTreesResult | undefined): string[] {
  if (trees === undefined) return []
  const line = (label: string, t: TreeRss | undefined): string => `    ${label}: ${t === undefined ? 'not measured' : `${t.mb.toFixed(1)} MiB in ${t.processes} process(es); per second ${t.samplesMb.map(x => x.toFixed(0)).join(' ')}`}`
  const out = ['  process tree RSS (gateway + its upstream processes, VmRSS summed, lowest of the last 5 samples):',
    line('gateway alone', trees.alone), line('10 eager upstreams', trees.eager), line('10 lazy upstreams, idle', trees.lazy)]
  if (trees.ratio !== undefined) out.push(`    lazy and idle ÷ gateway alone: ${trees.ratio.toFixed(2)}× (target ≤ ${TREE_TARGET_RATIO}×): ${trees.met === true ? 'met' : 'NOT met'}`)
  for (const p of trees.problems) out.push(`!!! ${p}`)
  return out
}
