import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ProcessLimits } from '../config/process-schema.ts'
import { SwitchboardError } from '../errors.ts'

/**
 * How a stdio upstream's limits reach its process group. Memory goes to a cgroup where the host
 * lets the gateway make one (v2 with the memory controller, else v1's memory hierarchy): a cgroup
 * counts the whole group and the kernel's OOM killer stops it. Without one, RLIMIT_DATA per
 * process: not RLIMIT_AS, which V8 (Node servers) reserves far beyond what it uses and fails at
 * start. CPU time, open files and processes are rlimits, set by util-linux prlimit before exec.
 */
export type MemoryMechanism = 'cgroup2' | 'cgroup1' | 'rlimit-data' | 'none'

const PRLIMIT = '/usr/bin/prlimit'
const V2_ROOTS = ['/sys/fs/cgroup', '/sys/fs/cgroup/unified']
const V1_ROOT = '/sys/fs/cgroup/memory'
const GROUP_DIR = 'switchboard'

let detected: { memory: MemoryMechanism, base?: string, prlimit: boolean } | undefined
let sequence = 0

/** Finds, once, where this host lets the gateway put a memory limit: a trial cgroup is made and removed. */
export function limitMechanisms (): { memory: MemoryMechanism, base?: string, prlimit: boolean } {
  if (detected !== undefined) return detected
  const prlimit = existsSync(PRLIMIT)
  for (const root of V2_ROOTS) {
    const base = join(root, GROUP_DIR)
    if (tryGroup(root, base, 'memory.max', 'cgroup.controllers', c => c.split(/\s+/).includes('memory'))) return (detected = { memory: 'cgroup2', base, prlimit })
  }
  const base = join(V1_ROOT, GROUP_DIR)
  if (tryGroup(V1_ROOT, base, 'memory.limit_in_bytes')) return (detected = { memory: 'cgroup1', base, prlimit })
  return (detected = { memory: prlimit ? 'rlimit-data' : 'none', prlimit })
}

function tryGroup (root: string, base: string, limitFile: string, controllers?: string, has?: (text: string) => boolean): boolean {
  try {
    if (controllers !== undefined && has !== undefined && !has(readFileSync(join(root, controllers), 'utf8'))) return false
    mkdirSync(base, { recursive: true })
    // v2: children of our group get the memory controller only when it is enabled on it.
    if (controllers !== undefined) { try { writeFileSync(join(base, 'cgroup.subtree_control'), '+memory') } catch { /* maybe already */ } }
    const trial = join(base, `probe-${process.pid}`)
    mkdirSync(trial)
    const ok = existsSync(join(trial, limitFile))
    rmdirSync(trial)
    return ok
  } catch {
    return false
  }
}

/** One spawn's limits: the command that applies them, and what its exit says about them. */
export interface SpawnLimits {
  /** Which mechanisms apply, for the log at start. */
  readonly applied: Readonly<Record<string, string>>
  wrap: (command: string, args: readonly string[]) => { command: string, args: string[] }
  /** The error for calls in flight when the process ended by a limit; undefined for any other end. */
  exitError: (code: number | null, signal: NodeJS.Signals | null) => SwitchboardError | undefined
  /** Removes its cgroup once its processes are gone. */
  release: () => void
}

export function spawnLimits (upstream: string, limits: ProcessLimits): SpawnLimits {
  const found = limitMechanisms()
  const applied: Record<string, string> = {}
  const rlimits: string[] = []
  let group: string | undefined
  if (limits.memoryMb !== undefined) {
    const bytes = limits.memoryMb * 1024 * 1024
    if ((found.memory === 'cgroup1' || found.memory === 'cgroup2') && found.base !== undefined) {
      group = join(found.base, `${upstream}-${process.pid}-${++sequence}`)
      try {
        mkdirSync(group)
        if (found.memory === 'cgroup2') writeFileSync(join(group, 'memory.max'), String(bytes))
        else writeFileSync(join(group, 'memory.limit_in_bytes'), String(bytes))
        applied.memoryMb = found.memory
      } catch {
        group = undefined
      }
    }
    if (group === undefined && found.prlimit) {
      rlimits.push(`--data=${bytes}`)
      applied.memoryMb = 'rlimit-data'
    }
  }
  if (found.prlimit) {
    // A soft CPU limit sends SIGXCPU; the hard one, a second later, SIGKILL for a server that ignores it.
    if (limits.cpuSeconds !== undefined) { rlimits.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`); applied.cpuSeconds = 'rlimit-cpu' }
    if (limits.openFiles !== undefined) { rlimits.push(`--nofile=${limits.openFiles}`); applied.openFiles = 'rlimit-nofile' }
    if (limits.processes !== undefined) { rlimits.push(`--nproc=${limits.processes}`); applied.processes = 'rlimit-nproc' }
  }
  for (const key of Object.keys(limits) as Array<keyof ProcessLimits>) if (limits[key] !== undefined && applied[key] === undefined) applied[key] = 'not applied (no cgroup and no prlimit)'
  const procs = group === undefined ? undefined : join(group, 'cgroup.procs')
  return {
    applied,
    wrap: (command, args) => {
      let out = { command, args: [...args] }
      if (rlimits.length > 0) out = { command: PRLIMIT, args: [...rlimits, '--', out.command, ...out.args] }
      // The shell joins the cgroup before it becomes the server (exec keeps the pid): nothing runs outside it.
      if (procs !== undefined) out = { command: '/bin/sh', args: ['-c', 'echo $$ > "$0" && exec "$@"', procs, out.command, ...out.args] }
      return out
    },
    exitError: (code, signal) => {
      if (group !== undefined && oomKills(group) > 0) return limitError(upstream, 'memoryMb', `over ${String(limits.memoryMb)} MiB`)
      if (limits.cpuSeconds !== undefined && (signal === 'SIGXCPU' || (signal === 'SIGKILL' && group === undefined && limits.memoryMb === undefined))) return limitError(upstream, 'cpuSeconds', `over ${limits.cpuSeconds} s of CPU`)
      // RLIMIT_DATA: an allocation fails, and a runtime that cannot allocate aborts (V8: SIGABRT or SIGTRAP).
      if (applied.memoryMb === 'rlimit-data' && (signal === 'SIGABRT' || signal === 'SIGTRAP' || signal === 'SIGSEGV' || code === 134 || code === 133)) return limitError(upstream, 'memoryMb', `an allocation over ${String(limits.memoryMb)} MiB failed`)
      return undefined
    },
    release: () => {
      if (group === undefined) return
      try { rmdirSync(group) } catch { /* still has a process; the next release or the host removes it */ }
    }
  }
}

function oomKills (group: string): number {
  for (const file of ['memory.events', 'memory.oom_control']) {
    try {
      const match = /oom_kill (\d+)/.exec(readFileSync(join(group, file), 'utf8'))
      if (match !== null) return Number(match[1])
    } catch { /* the other version's file */ }
  }
  return 0
}

function limitError (upstream: string, limit: keyof ProcessLimits, what: string): SwitchboardError {
  return new SwitchboardError('SB_ERR_UPSTREAM_LIMIT', `upstream ${upstream}'s process was stopped by its limit ${limit} (${what}); it is restarted`, { details: { limit } })
}
