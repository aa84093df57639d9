import { spawn, spawnSync } from 'node:child_process'
import { Socket, createServer } from 'node:net'
import { waitFor } from './abort.ts'
import { START_TIMEOUT_MS, STOP_GRACE_MS, sleep } from './common.ts'
import { manage, unmanage, type Managed } from './processes.ts'

/** A redis-server of the bench's own on a free loopback port, for the sessions-in-Redis paths; undefined when not installed. */
export async function startRedis (): Promise<string | undefined> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined
  const probe = createServer()
  await new Promise<void>(resolve => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise(resolve => probe.close(resolve))
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  let exited = false
  const exit = new Promise<void>(resolve => { child.once('exit', () => { exited = true; resolve() }) })
  const m: Managed = {
    name: 'redis-server',
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
  await waitFor('redis-server', START_TIMEOUT_MS, async () => await new Promise<true | undefined>((resolve) => {
    const socket = new Socket()
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(undefined) })
    socket.connect(port, '127.0.0.1')
  }))
  return `redis://127.0.0.1:${port}`
}
