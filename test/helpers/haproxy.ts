import { spawn } from 'node:child_process'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { requiredBinary } from './binary-or-skip.ts'
import { freePort } from './free-port.ts'

const BINARY = 'haproxy'
const START_TIMEOUT_MS = 5000
const STOP_TIMEOUT_MS = 3000
/** HAProxy adds it to every response: the name of the backend server (`r0`, `r1`, ...) that answered. */
export const SERVED_BY_HEADER = 'x-served-by'

export interface HaproxyBackend { name: string, port: number }

export interface Haproxy {
  /** http://127.0.0.1:PORT */
  url: string
  /** Each backend server's check state as HAProxy sees it: UP, DOWN, MAINT, `UP 1/2`... */
  serverStates: () => Promise<Record<string, string>>
  stop: () => Promise<void>
  /** HAProxy's own output so far (alerts, warnings), for assertion messages. */
  output: () => string
}

const binary = requiredBinary(BINARY, '-v', 'the gateway is NOT tested behind a load balancer', 'apt-get install haproxy, or brew install haproxy')

export const hasHaproxy = binary.installed

/** False, and the test skipped loudly, when {@link BINARY} is missing here; under CI=true the test fails instead. */
export const haproxyOrSkip = binary.orSkip

/**
 * The balancer the deploy/ files describe, shrunk for tests: readiness checks every 200 ms that
 * take a server out after one failure, and timeouts long enough for SSE streams. Kept in step with
 * deploy/haproxy.cfg, except that it balances per-request round robin where deploy/ hashes
 * Mcp-Session-Id: the tests send a session's requests to every replica on purpose.
 */
export function haproxyConfig (port: number, backends: HaproxyBackend[], statsSocket: string): string {
  return `global
  maxconn 1000
  stats socket ${statsSocket} mode 600 level admin

defaults
  mode http
  timeout connect 1s
  timeout client 60s
  timeout server 60s
  timeout tunnel 1h
  timeout http-keep-alive 10s
  # Keep-alive on both sides, and yet every request is balanced on its own: without
  # "option prefer-last-server" HAProxy picks a server per request and reuses an idle
  # server connection only if one to that server exists (http-reuse safe).
  option http-keep-alive
  http-reuse safe
  # A connection refused (a replica just gone) is retried once on another server.
  retries 1
  option redispatch

listen gateway
  bind 127.0.0.1:${port}
  balance roundrobin
  option httpchk GET /readyz
  http-check expect status 200
  default-server check inter 200 fall 1 rise 1
  http-response set-header ${SERVED_BY_HEADER} %s
${backends.map(b => `  server ${b.name} 127.0.0.1:${b.port}`).join('\n')}
`
}

async function accepts (port: number): Promise<boolean> {
  return await new Promise(resolve => {
    const socket = createConnection({ host: '127.0.0.1', port })
    const done = (ok: boolean): void => { socket.destroy(); resolve(ok) }
    socket.setTimeout(500, () => { done(false) })
    socket.once('error', () => { done(false) })
    socket.once('connect', () => { done(true) })
  })
}

async function statsCommand (socketPath: string, command: string): Promise<string> {
  return await new Promise((resolve, reject) => {
    const socket = createConnection(socketPath)
    let out = ''
    socket.setEncoding('utf8')
    socket.setTimeout(2000, () => { socket.destroy(new Error(`haproxy stats socket: no answer to ${command}`)) })
    socket.once('connect', () => socket.write(command + '\n'))
    socket.on('data', (chunk: string) => { out += chunk })
    socket.once('end', () => { resolve(out) })
    socket.once('error', reject)
  })
}

async function exited (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exit = once(child, 'exit')
  // SIGUSR1 would wait for every connection to end (soft stop); SIGTERM is the hard stop.
  child.kill('SIGTERM')
  let timer: NodeJS.Timeout | undefined
  await Promise.race([exit, new Promise(resolve => { timer = setTimeout(resolve, STOP_TIMEOUT_MS) })])
  clearTimeout(timer)
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

/**
 * A private HAProxy on a free loopback port in front of `backends`; gone when the test ends.
 * `port`: listen there instead (a public URL the replicas were configured with before the balancer
 * started: hold it with holdPort() meanwhile and release it just before).
 */
export async function startHaproxy (t: TestContext, backends: HaproxyBackend[], options: { port?: number } = {}): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-haproxy-'))
  const statsSocket = join(dir, 'admin.sock')
  let child: ChildProcess | undefined
  let output = ''
  t.after(async () => {
    if (child !== undefined) await exited(child)
    rmSync(dir, { recursive: true, force: true })
  })

  // Another process may take the port between freePort() and the bind: try a few.
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? await freePort()
    const file = join(dir, 'haproxy.cfg')
    writeFileSync(file, haproxyConfig(port, backends, statsSocket))
    output = ''
    const proc = spawn(BINARY, ['-f', file, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = proc
    const collect = (chunk: Buffer): void => { output = (output + chunk.toString()).slice(-8000) }
    proc.stdout?.on('data', collect)
    proc.stderr?.on('data', collect)
    const deadline = Date.now() + START_TIMEOUT_MS
    let up = false
    while (proc.exitCode === null && Date.now() < deadline) {
      if (await accepts(port)) {
        up = true
        break
      }
      await new Promise(resolve => setTimeout(resolve, 20))
    }
    if (up) {
      return {
        url: `http://127.0.0.1:${port}`,
        output: () => output,
        stop: async () => { await exited(proc) },
        serverStates: async () => {
          if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`haproxy exited (${String(proc.exitCode ?? proc.signalCode)}):\n${output}`)
          let csv: string
          try {
            csv = await statsCommand(statsSocket, 'show stat')
          } catch (err: unknown) {
            // The socket is (re)created by haproxy itself; a moment without it is not an answer.
            if ((err as { code?: string }).code === 'ENOENT' && proc.exitCode === null) return {}
            throw err
          }
          // CSV: "# pxname,svname,qcur,...,status,..." then one line per frontend, server and backend.
          const [header, ...rows] = csv.trim().split('\n')
          const columns = (header ?? '').replace(/^# /, '').split(',')
          const name = columns.indexOf('svname')
          const status = columns.indexOf('status')
          const states: Record<string, string> = {}
          for (const row of rows) {
            const cells = row.split(',')
            const server = cells[name]
            if (server !== undefined && server !== 'FRONTEND' && server !== 'BACKEND') states[server] = cells[status] ?? ''
          }
          return states
        }
      }
    }
    await exited(proc)
    if (attempt === 3) throw new Error(`haproxy did not start on port ${port}:\n${output}`)
  }
}
