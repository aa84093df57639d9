import { z } from 'zod'

// How the gateway runs its stdio upstreams' processes: when they start, when an idle one stops,
// what each may use, and how many run at once (see docs/process-economy.md).

export const processLimitsSchema = z.strictObject({
  memoryMb: z.number().int().min(16).optional().describe('memory of the process and its children, in MiB: a cgroup memory limit where the host lets the gateway make one, else RLIMIT_DATA on each process'),
  cpuSeconds: z.number().int().min(1).optional().describe('CPU time of each process, in seconds (RLIMIT_CPU): past it the kernel stops the process'),
  openFiles: z.number().int().min(16).optional().describe('open file descriptors of each process (RLIMIT_NOFILE)'),
  processes: z.number().int().min(1).optional().describe('processes of the user the server runs as (RLIMIT_NPROC; not enforced for root)')
}).describe('resource limits of a stdio upstream\'s process group; a server that hits one fails its calls in flight with SB_ERR_UPSTREAM_LIMIT and is restarted')

export const startSchema = z.enum(['eager', 'lazy']).describe('eager: started with the gateway; lazy: started on its first call, its tools listed meanwhile from the last listing the gateway saw')
export const idleStopMsSchema = z.number().int().positive().describe('stdio: stopped after this long with no call in flight, no resource subscription and no session\'s own connection; started again on the next call (absent: never)')

export const upstreamDefaultsSchema = z.strictObject({
  start: startSchema.optional(),
  idleStopMs: idleStopMsSchema.optional(),
  limits: processLimitsSchema.optional(),
  maxRunning: z.number().int().min(1).optional().describe('at most this many stdio processes run at once, upstreams\' own and sessions\' own (isolation: session) alike: the least recently used idle upstream is stopped to start another; with none idle, a call waits (within its timeout) for one. A session\'s process takes a free slot only, and never the one kept for the shared upstreams: without one the session\'s request fails at once (SB_ERR_SESSION_LIMIT)')
}).describe('process settings applied to every stdio upstream that does not set its own')

export type ProcessLimits = z.output<typeof processLimitsSchema>
export type UpstreamDefaults = z.output<typeof upstreamDefaultsSchema>

/** What an upstream's process runs under: its own settings, else the defaults. */
export interface ProcessSettings {
  start: 'eager' | 'lazy'
  idleStopMs: number | undefined
  limits: ProcessLimits | undefined
}

interface ProcessKeys { transport: string, start?: 'eager' | 'lazy' | undefined, idleStopMs?: number | undefined, limits?: ProcessLimits | undefined }

/** The settings of one upstream; a non-stdio upstream is always eager, never stopped, unlimited. */
export function processSettings (upstream: ProcessKeys, defaults: UpstreamDefaults | undefined): ProcessSettings {
  if (upstream.transport !== 'stdio') return { start: 'eager', idleStopMs: undefined, limits: undefined }
  const limits = upstream.limits ?? defaults?.limits
  return {
    start: upstream.start ?? defaults?.start ?? 'eager',
    idleStopMs: upstream.idleStopMs ?? defaults?.idleStopMs,
    limits: limits === undefined || Object.values(limits).every(v => v === undefined) ? undefined : limits
  }
}

/** The process keys a non-stdio upstream sets, each refused: the gateway runs no process of theirs. */
export function misplacedProcessKeys (upstream: Record<string, unknown>): string[] {
  return ['start', 'idleStopMs', 'limits'].filter(key => upstream[key] !== undefined)
}
