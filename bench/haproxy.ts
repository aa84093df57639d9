import { spawn, spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import path from 'node:path'

// Debian installs haproxy in /usr/sbin, which a user's PATH may lack.
const BINARIES = ['haproxy', '/usr/sbin/haproxy']
const START_TIMEOUT_MS = 10_000

function binary (): string | undefined {
  return BINARIES.find(b => spawnSync(b, ['-v'], { stdio: 'ignore' }).status === 0)
}

export function hasHaproxy (): boolean {
  return binary() !== undefined
}

async function freePort (): Promise<number> {
  const probe = createServer()
  await new Promise<void>(resolve => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise(resolve => probe.close(resolve))
  return port
}

/**
 * How the bench's HAProxy spreads requests: `session` (the default, deploy/haproxy.cfg's): a
 * consistent hash of Mcp-Session-Id, so each session's requests stay on one replica (initialize,
 * which has no id yet, goes round robin); or `roundrobin`: every request on its own, so one
 * session's calls are spread over every replica. BENCH_HAPROXY_BALANCE picks one for a run.
 */
export type Balance = 'roundrobin' | 'session'

export function balanceOf (value = process.env.BENCH_HAPROXY_BALANCE): Balance {
  if (value === undefined || value === '' || value === 'session') return 'session'
  if (value === 'roundrobin') return 'roundrobin'
  throw new Error(`BENCH_HAPROXY_BALANCE must be roundrobin or session, not ${value}`)
}

const BALANCE_LINES: Record<Balance, string[]> = {
  roundrobin: ['  balance roundrobin'],
  session: ['  balance hdr(mcp-session-id)', '  hash-type consistent']
}

/** HAProxy on loopback over the given gateway ports (balanced as `balance` says), health checks on /readyz. */
export async function startHaproxy (dir: string, name: string, ports: number[], balance: Balance = 'session'): Promise<{ url: string, stop: () => Promise<void> }> {
  const bin = binary()
  if (bin === undefined) throw new Error('haproxy is not installed')
  const port = await freePort()
  const file = path.join(dir, `${name}.cfg`)
  writeFileSync(file, [
    'global', '  maxconn 4000',
    'defaults', '  mode http', '  timeout connect 1s', '  timeout client 60s', '  timeout server 60s', '  timeout http-keep-alive 10s',
    '  option http-keep-alive', '  http-reuse safe',
    'listen gateway', `  bind 127.0.0.1:${port}`, ...BALANCE_LINES[balance], '  option httpchk GET /readyz', '  http-check expect status 200',
    ...ports.map((p, i) => `  server r${i} 127.0.0.1:${p} check inter 1s`),
    ''
  ].join('\n'))
  const child = spawn(bin, ['-f', file, '-db'], { stdio: 'ignore' })
  const exited = new Promise<void>(resolve => child.once('exit', () => { resolve() }))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + START_TIMEOUT_MS
  for (;;) {
    const ok = await fetch(`${url}/readyz`).then(r => r.status === 200, () => false)
    if (ok) break
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`haproxy did not serve ${url} within ${START_TIMEOUT_MS} ms`)
    }
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM')
      await Promise.race([exited, new Promise(resolve => setTimeout(resolve, 2000))])
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
  }
}
