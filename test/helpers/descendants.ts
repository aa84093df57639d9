import { readdirSync, readFileSync } from 'node:fs'

export interface ProcessInfo { pid: number, args: string[] }

/** A process's parent pid, from /proc; undefined once it has gone. */
export function parentOf (pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name sits in parentheses and may hold spaces: fields start after the last ')'.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  } catch {
    return undefined
  }
}

/** Every live process below `root` (Linux /proc), with its command line. */
export function descendants (root: number): ProcessInfo[] {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry)
    if (!Number.isInteger(pid)) continue
    const parent = parentOf(pid)
    if (parent !== undefined) parents.set(pid, parent)
  }
  const out: ProcessInfo[] = []
  for (const pid of parents.keys()) {
    let up = parents.get(pid)
    while (up !== undefined && up !== root && up > 1) up = parents.get(up)
    if (up !== root) continue
    try {
      out.push({ pid, args: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(a => a !== '') })
    } catch {}
  }
  return out
}
