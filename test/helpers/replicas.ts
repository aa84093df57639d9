import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { freePort } from './free-port.ts'
import { REPO_ROOT } from './spawn-fixture.ts'
import type { LogLine } from './start-gateway.ts'

const READY_TIMEOUT_MS = 30_000
const STOP_TIMEOUT_MS = 5000

export interface Replica {
  /** r0, r1, ...: also its server name behind startHaproxy(). */
  name: string
  port: number
  pid: number
  /** http://127.0.0.1:PORT */
  baseUrl: string
  kill: (signal: NodeJS.Signals) => void
  /** The exit code, or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals | null>
  /** Every JSON log line so far. */
  readonly logs: LogLine[]
  /** Everything that was not a JSON log line (stderr, stack traces), for assertion messages. */
  output: () => string
  /** The config file it was started from (with its listen address filled in). */
  configFile: string
}

/**
 * K gateway processes (`node --import tsx src/main.ts`), each from `config` with its own free
 * `listen.port` on 127.0.0.1; resolves once each has logged that it listens (so `logLevel` must be
 * info or lower) and its `/readyz` answers 200. All are SIGKILLed when
 * the test ends, should one still run.
 */
export async function startReplicas (t: TestContext, count: number, config: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env, args: string[] = []): Promise<Replica[]> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-replicas-'))
  const replicas: Replica[] = []
  t.after(async () => {
    await Promise.all(replicas.map(async (r) => {
      const timer = setTimeout(() => { r.kill('SIGKILL') }, STOP_TIMEOUT_MS)
      r.kill('SIGTERM')
      await r.exited
      clearTimeout(timer)
      keepLog(r)
    }))
    rmSync(dir, { recursive: true, force: true })
  })
  // Started together: on two cores tsx's start-up dominates, one after the other would triple it.
  await Promise.all(Array.from({ length: count }, async (_, i) => {
    replicas.push(await startReplica(dir, `r${i}`, config, undefined, env, args))
  }))
  replicas.sort((a, b) => a.name.localeCompare(b.name))
  return replicas
}

/** With SB_REPLICA_LOG_DIR set, a replica's log lines and output are kept there (`<name>-<pid>.log`) when it stops. */
function keepLog (r: Replica): void {
  const dir = process.env.SB_REPLICA_LOG_DIR
  if (dir !== undefined) writeFileSync(join(dir, `${r.name}-${r.pid}.log`), r.logs.map(l => JSON.stringify(l)).join('\n') + '\n' + r.output())
}

/** One replica again on a port it had before (a restart behind the same balancer); killed when the test ends. */
export async function startReplicaAt (t: TestContext, name: string, port: number, config: Record<string, unknown>): Promise<Replica> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-replica-'))
  const replica = await startReplica(dir, name, config, port)
  t.after(async () => {
    const timer = setTimeout(() => { replica.kill('SIGKILL') }, STOP_TIMEOUT_MS)
    replica.kill('SIGTERM')
    await replica.exited
    clearTimeout(timer)
    keepLog(replica)
    rmSync(dir, { recursive: true, force: true })
  })
  return replica
}

async function startReplica (dir: string, name: string, config: Record<string, unknown>, fixedPort?: number, env: NodeJS.ProcessEnv = process.env, args: string[] = []): Promise<Replica> {
  // Another process may take the port between freePort() and the bind: try a few.
  for (let attempt = 1; ; attempt++) {
    const port = fixedPort ?? await freePort()
    const file = join(dir, `${name}.json`)
    const listen = { ...(config.listen as Record<string, unknown> | undefined), host: '127.0.0.1', port }
    writeFileSync(file, JSON.stringify({ ...config, listen }))
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', '--config', file, ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    const logs: LogLine[] = []
    let other = ''
    let partial = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) {
        try {
          logs.push(JSON.parse(line) as LogLine)
        } catch {
          other = (other + line + '\n').slice(-8000)
        }
      }
    })
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => { other = (other + chunk).slice(-8000) })
    const exited = new Promise<number | NodeJS.Signals | null>(resolve => {
      child.once('exit', (code, signal) => { resolve(code ?? signal) })
    })
    const gone = (): boolean => child.exitCode !== null || child.signalCode !== null
    const replica: Replica = {
      name,
      port,
      pid: child.pid ?? -1,
      baseUrl: `http://127.0.0.1:${port}`,
      kill: (signal) => { if (!gone()) child.kill(signal) },
      exited,
      logs,
      output: () => other,
      configFile: file
    }
    const deadline = Date.now() + READY_TIMEOUT_MS
    // Its own log line first: another process that took the port first would answer /readyz too.
    const listening = (): boolean => logs.some(l => l.msg === 'switchboard listening') && (config.admin === undefined || logs.some(l => l.msg === 'admin API listening'))
    while (!gone() && Date.now() < deadline) {
      const status = listening() ? await fetch(`${replica.baseUrl}/readyz`).then(res => res.status, () => 0) : 0
      if (status === 200) return replica
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    replica.kill('SIGKILL')
    await exited
    // The gateway says so in words on stderr; a stack trace would carry the code.
    const inUse = /EADDRINUSE|address already in use/.test(other + logs.map(l => JSON.stringify(l)).join('\n'))
    if (!inUse || attempt === 3) throw new Error(`replica ${name} was not ready on port ${port} within ${READY_TIMEOUT_MS} ms:\n${other}\n${logs.map(l => JSON.stringify(l)).join('\n')}`)
  }
}
