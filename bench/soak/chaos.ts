// Faults on a schedule, evenly spread over the run after a warm-up, cycling through the kinds:
// restart Redis empty, SIGKILL a replica and start it again (after the Redis restart, so that a
// replica that never saw the sessions opened before it meets them), crash a replica's stdio upstream
// (SIGKILL: the replica restarts it), pause Redis for two seconds, crash the Streamable HTTP upstream
// and start it again on its port. Each fault records when it began and when it was over.
import type { Checker } from './checker.ts'
import { type Cluster, crashStdioUpstream, crashWeb, restartReplica } from './topology.ts'
import type { Teardown } from './teardown.ts'

export type FaultKind = 'replica-kill' | 'stdio-upstream-crash' | 'redis-restart' | 'redis-pause' | 'http-upstream-crash'
const KINDS: FaultKind[] = ['redis-restart', 'replica-kill', 'stdio-upstream-crash', 'redis-pause', 'http-upstream-crash']
const PAUSE_MS = 2_000
/** Faults this far apart when the run is long enough (more than the breaker's 15 s cooldown), at least 10 s apart in a short run. */
const SPACING_S = 20
const MIN_SPACING_S = 10
const WARMUP_S = 5

export interface Fault { kind: FaultKind, target: string, at: number, over: number, detail?: string }

/** When (seconds after the load starts) each fault fires. */
export function schedule (seconds: number): Array<{ kind: FaultKind, atS: number }> {
  const warmup = Math.min(WARMUP_S, seconds / 4)
  // The last fault leaves as long a tail as the spacing, to see its errors end.
  const span = seconds - warmup
  const count = Math.max(1, Math.min(KINDS.length * 4, Math.max(Math.floor(span / SPACING_S), Math.min(KINDS.length, Math.floor(span / MIN_SPACING_S)))))
  const spacing = span / count
  return Array.from({ length: count }, (_, i) => ({ kind: KINDS[i % KINDS.length] as FaultKind, atS: warmup + i * spacing }))
}

export async function runChaos (cluster: Cluster, teardown: Teardown, checker: Checker, seconds: number, stopped: () => boolean, log: (line: string) => void): Promise<Fault[]> {
  const faults: Fault[] = []
  let replicaTurn = 0
  for (const { kind, atS } of schedule(seconds)) {
    while (!stopped() && checker.now() < atS * 1000) await sleep(Math.min(200, atS * 1000 - checker.now()))
    if (stopped()) break
    const at = checker.now()
    const fault: Fault = { kind, target: '', at, over: at }
    faults.push(fault)
    try {
      switch (kind) {
        case 'replica-kill': {
          const index = replicaTurn++ % cluster.replicas.length
          fault.target = cluster.replicas[index]?.name ?? '?'
          log(`${at} ms: SIGKILL ${fault.target}, then start it again`)
          await restartReplica(teardown, cluster, index)
          break
        }
        case 'stdio-upstream-crash': {
          const index = replicaTurn++ % cluster.replicas.length
          fault.target = `local on ${cluster.replicas[index]?.name ?? '?'}`
          const pid = crashStdioUpstream(cluster, index)
          fault.detail = pid === undefined ? 'no stdio child found' : `pid ${pid}`
          log(`${at} ms: SIGKILL the stdio upstream of ${cluster.replicas[index]?.name ?? '?'} (${fault.detail})`)
          break
        }
        case 'redis-restart':
          fault.target = 'redis'
          log(`${at} ms: SIGKILL redis-server, start it again empty`)
          await cluster.redis.restart()
          break
        case 'redis-pause':
          fault.target = 'redis'
          log(`${at} ms: SIGSTOP redis-server for ${PAUSE_MS} ms`)
          cluster.redis.pause()
          try { await sleep(PAUSE_MS) } finally { cluster.redis.resume() }
          break
        case 'http-upstream-crash':
          fault.target = 'web'
          log(`${at} ms: SIGKILL the Streamable HTTP upstream, start it again on its port`)
          await crashWeb(teardown, cluster)
          break
      }
    } catch (err: unknown) {
      fault.detail = `${fault.detail ?? ''} failed: ${err instanceof Error ? err.message : String(err)}`.trim()
      log(`fault ${kind} failed: ${fault.detail}`)
    }
    fault.over = checker.now()
  }
  return faults
}

const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, Math.max(0, ms)))
