import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { requiredBinary } from './binary-or-skip.ts'
import { freePort } from './free-port.ts'

const BINARY = 'redis-server'
const START_TIMEOUT_MS = 5000
const STOP_TIMEOUT_MS = 3000

export interface RedisServer {
  port: number
  /** redis://[:password@]127.0.0.1:PORT */
  url: string
  /** SIGTERM, waits for the exit. */
  stop: () => Promise<void>
  /** SIGKILL, waits for the exit: the abrupt death a client has to survive. */
  kill: () => Promise<void>
  /** Starts it again on the same port (empty: nothing is persisted). */
  restart: () => Promise<void>
  /** SIGSTOP: connections stay open and nothing answers, like a Redis stuck on a slow command. */
  pause: () => void
  /** SIGCONT */
  resume: () => void
}

const binary = requiredBinary(BINARY, '--version', 'the Redis-backed rate limiter is NOT tested', 'apt-get install redis-server, or brew install redis')

export const hasRedisServer = binary.installed

/** False, and the test skipped loudly, when {@link BINARY} is missing here; under CI=true the test fails instead. */
export const redisOrSkip = binary.orSkip

/** Resolves once the server answers PING (any reply: with requirepass it is a NOAUTH error). */
async function answers (port: number): Promise<boolean> {
  return await new Promise(resolve => {
    const socket = createConnection({ host: '127.0.0.1', port })
    const done = (ok: boolean): void => { socket.destroy(); resolve(ok) }
    socket.setTimeout(500, () => { done(false) })
    socket.once('error', () => { done(false) })
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.once('data', (data) => { done(data.length > 0) })
  })
}

async function exited (child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exit = once(child, 'exit')
  child.kill(signal)
  let timer: NodeJS.Timeout | undefined
  await Promise.race([exit, new Promise(resolve => { timer = setTimeout(resolve, STOP_TIMEOUT_MS) })])
  clearTimeout(timer)
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

/** A private redis-server on a free loopback port, never the system one; gone when the test ends. `args`: more redis-server settings. */
export async function startRedisServer (t: TestContext, options: { password?: string, args?: readonly string[] } = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-redis-'))
  let child: ChildProcess | undefined
  let output = ''

  async function launch (port: number): Promise<void> {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no']
    if (options.password !== undefined) args.push('--requirepass', options.password)
    // Extra settings (--replicaof …, --cluster-enabled yes …), after ours so they win.
    args.push(...(options.args ?? []))
    output = ''
    const proc = spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    child = proc
    const collect = (chunk: Buffer): void => { output = (output + chunk.toString()).slice(-4000) }
    proc.stdout?.on('data', collect)
    proc.stderr?.on('data', collect)
    const deadline = Date.now() + START_TIMEOUT_MS
    while (!await answers(port)) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        await exited(proc, 'SIGKILL')
        throw new Error(`redis-server did not start on port ${port}:\n${output}`)
      }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
  }

  let port = await freePort()
  // Another process may take the port between freePort() and the bind: try a few.
  for (let attempt = 1; ; attempt++) {
    try {
      await launch(port)
      break
    } catch (err: unknown) {
      if (attempt === 3) {
        rmSync(dir, { recursive: true, force: true })
        throw err
      }
      port = await freePort()
    }
  }

  const auth = options.password === undefined ? '' : `:${encodeURIComponent(options.password)}@`
  const server: RedisServer = {
    port,
    url: `redis://${auth}127.0.0.1:${port}`,
    stop: async () => { if (child !== undefined) await exited(child, 'SIGTERM') },
    kill: async () => { if (child !== undefined) await exited(child, 'SIGKILL') },
    restart: async () => {
      if (child !== undefined) await exited(child, 'SIGKILL')
      await launch(port)
    },
    pause: () => { child?.kill('SIGSTOP') },
    resume: () => { child?.kill('SIGCONT') }
  }
  t.after(async () => {
    await server.kill()
    rmSync(dir, { recursive: true, force: true })
  })
  return server
}
