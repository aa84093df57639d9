// The child processes the bench starts itself (server-everything over HTTP, the gateways, Redis),
// held in one set so that every one of them is stopped at the end, plus the pids started by
// those children (a gateway's upstream) that must not outlive the run.
import { spawn, type ChildProcess } from 'node:child_process'
import { ROOT, STOP_GRACE_MS, log, sleep } from './common.ts'
import { isAlive } from './proc.ts'

export interface Managed {
  name: string
  child: ChildProcess
  pid: number
  output: () => string
  alive: () => boolean
  stop: () => Promise<void>
}

const managed = new Set<Managed>()
/** Pids started by something we started (the gateway's upstream): killed at the end if still alive. */
const strays = new Set<number>()

/** Adds a process started elsewhere (e.g. redis-server) to the set stopped at the end; its stop() must call unmanage(). */
export function manage (m: Managed): void {
  managed.add(m)
}

export function unmanage (m: Managed): void {
  managed.delete(m)
}

export function addStray (pid: number): void {
  strays.add(pid)
}

export function startProcess (name: string, args: string[], env: NodeJS.ProcessEnv): Managed {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  if (child.pid === undefined) throw new Error(`could not start ${name}`)
  let tail = ''
  const keep = (chunk: Buffer): void => { tail = (tail + chunk.toString('utf8')).slice(-8_192) }
  // Always drained, so a chatty child never blocks on a full pipe.
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  let exited = false
  const exit = new Promise<void>(resolve => { child.once('exit', () => { exited = true; resolve() }) })
  const m: Managed = {
    name,
    child,
    pid: child.pid,
    output: () => tail,
    alive: () => !exited,
    stop: async () => {
      if (!exited) {
        child.kill('SIGTERM')
        await Promise.race([exit, sleep(STOP_GRACE_MS)])
      }
      if (!exited) {
        log(`${name} ignored SIGTERM for ${STOP_GRACE_MS} ms; SIGKILL`)
        child.kill('SIGKILL')
        await Promise.race([exit, sleep(STOP_GRACE_MS)])
      }
      managed.delete(m)
    }
  }
  managed.add(m)
  return m
}

/** Stops every managed process still running (each stop is bounded), then kills the strays that outlived their parent. */
export async function stopAllProcesses (): Promise<void> {
  for (const m of [...managed]) await m.stop()
  await sleep(200)
  for (const pid of strays) {
    if (!isAlive(pid)) continue
    log(`process ${pid} outlived its parent; SIGKILL`)
    try { process.kill(pid, 'SIGKILL') } catch { /* gone */ }
  }
}
