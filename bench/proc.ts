// Reading /proc (Linux only): CPU time, peak RSS, children, and the TCP ports a process listens on.
import { execFileSync } from 'node:child_process'
import { readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs'
import { waitFor } from './abort.ts'
import { START_TIMEOUT_MS } from './common.ts'

/** Clock ticks per second, the unit of the CPU times in /proc/<pid>/stat. */
export const CLK_TCK = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 5_000 }).trim())
    return Number.isInteger(n) && n > 0 ? n : 100
  } catch {
    return 100
  }
})()

function statFields (pid: number, file = `/proc/${pid}/stat`): string[] | undefined {
  try {
    const stat = readFileSync(file, 'utf8')
    // Fields after "pid (comm) ": state is field 3, so field N is index N - 3.
    return stat.slice(stat.lastIndexOf(')') + 2).trim().split(' ')
  } catch {
    return undefined
  }
}

/**
 * The process's own user+system CPU time in µs (fields 14 and 15; children's time is excluded),
 * all threads, or only the main (JavaScript) thread.
 */
export function processCpuUs (pid: number | undefined, mainThreadOnly = false): number | undefined {
  if (pid === undefined) return undefined
  const f = statFields(pid, mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : undefined)
  if (f === undefined) return undefined
  return (Number(f[11]) + Number(f[12])) * 1e6 / CLK_TCK
}

export function isAlive (pid: number | undefined): boolean {
  if (pid === undefined) return false
  const f = statFields(pid)
  return f !== undefined && f[0] !== 'Z' && f[0] !== 'X'
}

export function statusKb (pid: number | undefined, field: string): number | undefined {
  if (pid === undefined) return undefined
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m?.[1] === undefined ? undefined : Number(m[1])
  } catch {
    return undefined
  }
}

/** Resets the process's VmHWM to its current RSS (Linux ≥ 4.0); false where it is not allowed. */
export function resetPeakRss (pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5')
    return true
  } catch {
    return false
  }
}

export function cmdlineOf (pid: number): string {
  return argvOf(pid).join(' ')
}

export function argvOf (pid: number): string[] {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1) } catch { return [] }
}

/** Every live process with its parent pid, from one scan of /proc. */
function parents (): Map<number, number> {
  const out = new Map<number, number>()
  let entries: string[] = []
  try { entries = readdirSync('/proc') } catch { return out }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    const f = statFields(Number(entry))
    if (f !== undefined && f[0] !== 'Z' && f[0] !== 'X') out.set(Number(entry), Number(f[1]))
  }
  return out
}

export function childrenOf (pid: number): number[] {
  return [...parents()].filter(([, ppid]) => ppid === pid).map(([child]) => child)
}

/** The process and all its live descendants (a peer's shell wrapper, its upstream and theirs). */
export function treeOf (root: number): number[] {
  const byParent = new Map<number, number[]>()
  for (const [child, ppid] of parents()) byParent.set(ppid, [...(byParent.get(ppid) ?? []), child])
  const out: number[] = []
  const queue = isAlive(root) ? [root] : []
  // Bounded: a pid is visited once, and /proc lists finitely many.
  const seen = new Set<number>()
  while (queue.length > 0) {
    const pid = queue.shift() as number
    if (seen.has(pid)) continue
    seen.add(pid)
    out.push(pid)
    queue.push(...(byParent.get(pid) ?? []))
  }
  return out
}

function decodeProcAddress (hex: string): string {
  if (hex.length === 8) return [6, 4, 2, 0].map(i => parseInt(hex.slice(i, i + 2), 16)).join('.')
  const words: string[] = []
  for (let w = 0; w < 4; w++) {
    const word = hex.slice(w * 8, w * 8 + 8)
    const bytes = [6, 4, 2, 0].map(i => word.slice(i, i + 2)).join('')
    words.push(bytes.slice(0, 4), bytes.slice(4, 8))
  }
  return words.map(x => parseInt(x, 16).toString(16)).join(':')
}

function isLoopbackAddress (address: string): boolean {
  return address.startsWith('127.') || address === '0:0:0:0:0:0:0:1' || /^0:0:0:0:0:ffff:7f/.test(address)
}

/** TCP sockets the process is listening on, from its fds and /proc/net/tcp{,6}. */
function listeningSockets (pid: number): Array<{ address: string, port: number }> {
  const inodes = new Set<string>()
  let fds: string[] = []
  try { fds = readdirSync(`/proc/${pid}/fd`) } catch { return [] }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (m?.[1] !== undefined) inodes.add(m[1])
    } catch { /* fd closed meanwhile */ }
  }
  const out: Array<{ address: string, port: number }> = []
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = ''
    try { text = readFileSync(file, 'utf8') } catch { continue }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9] as string)) continue
      const [addr, port] = (f[1] as string).split(':')
      out.push({ address: decodeProcAddress(addr as string), port: parseInt(port as string, 16) })
    }
  }
  return out
}

/** The one loopback TCP port the process listens on; refuses a non-loopback bind. */
export async function loopbackPortOf (pid: number, what: string, alive: () => boolean): Promise<number> {
  return await waitFor(`${what} to listen`, START_TIMEOUT_MS, () => {
    if (!alive()) throw new Error(`${what} exited before listening`)
    const sockets = listeningSockets(pid)
    const wide = sockets.find(s => !isLoopbackAddress(s.address))
    if (wide !== undefined) throw new Error(`${what} listens on ${wide.address}:${wide.port}, not loopback only`)
    return sockets[0]?.port
  })
}
