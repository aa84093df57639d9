import { execFile, spawn, spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { Socket, createServer } from 'node:net'
import { waitFor } from './abort.ts'
import { START_TIMEOUT_MS, STOP_GRACE_MS, sleep } from './common.ts'
import { manage, unmanage, type Managed } from './processes.ts'

const run = promisify(execFile)

async function freePort (): Promise<number> {
  const probe = createServer()
  await new Promise<void>(resolve => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise(resolve => probe.close(resolve))
  return port
}

/** A redis-server of the bench's own on a free loopback port, for the sessions-in-Redis paths; undefined when not installed. */
export async function startRedis (): Promise<{ url: string, pid: number } | undefined> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined
  const port = await freePort()
  const pid = await startServer('redis-server', port, [])
  return { url: `redis://127.0.0.1:${port}`, pid }
}

/** One redis-server on a loopback port, stopped with the bench's other processes; resolves once it accepts connections. */
async function startServer (name: string, port: number, extra: string[]): Promise<number> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra], { stdio: 'ignore' })
  let exited = false
  const exit = new Promise<void>(resolve => { child.once('exit', () => { exited = true; resolve() }) })
  const m: Managed = {
    name,
    child,
    pid: child.pid ?? -1,
    output: () => '',
    alive: () => !exited,
    stop: async () => {
      if (!exited) child.kill('SIGKILL')
      await Promise.race([exit, sleep(STOP_GRACE_MS)])
      unmanage(m)
    }
  }
  manage(m)
  await waitFor(name, START_TIMEOUT_MS, async () => await new Promise<true | undefined>((resolve) => {
    const socket = new Socket()
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(undefined) })
    socket.connect(port, '127.0.0.1')
  }))
  return m.pid
}

/** Answers once `CLUSTER INFO` on port says the cluster is ok (all slots covered, agreed on). */
async function clusterOk (port: number): Promise<true | undefined> {
  const out = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'CLUSTER', 'INFO'], { timeout: 2000 }).catch(() => ({ stdout: '' }))
  return /cluster_state:ok/.test(out.stdout) ? true : undefined
}

/**
 * A three-primary Redis Cluster of the bench's own (no replicas), made as the tests make theirs:
 * `redis-server --cluster-enabled yes` per node, then `redis-cli --cluster create`. Each node gets
 * its own directory (for its nodes.conf) and bus port. The seeds as `redis.cluster` wants them,
 * and the nodes' pids; undefined when redis-server or redis-cli is not installed.
 */
export async function startRedisCluster (dir: string, primaries = 3): Promise<{ seeds: Array<{ host: string, port: number }>, pids: number[] } | undefined> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined
  if (spawnSync('redis-cli', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined
  const ports: number[] = []
  const pids: number[] = []
  for (let i = 0; i < primaries; i++) {
    const port = await freePort()
    // The bus port would default to port + 10000, which may be taken or past 65535.
    const busPort = await freePort()
    const nodeDir = path.join(dir, `redis-cluster-${i}`)
    mkdirSync(nodeDir, { recursive: true })
    pids.push(await startServer(`redis-server (cluster node ${i})`, port, ['--dir', nodeDir, '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(busPort), '--cluster-node-timeout', '2000']))
    ports.push(port)
  }
  await run('redis-cli', ['--cluster', 'create', ...ports.map(p => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: START_TIMEOUT_MS })
  for (const port of ports) await waitFor(`redis cluster node ${port} ok`, START_TIMEOUT_MS, async () => await clusterOk(port))
  return { seeds: ports.map(port => ({ host: '127.0.0.1', port })), pids }
}
