// Starting a Switchboard gateway for the bench: a temporary config (loopback, port 0), the gateway
// as a child process under `node --import tsx`, ready on /readyz, with its one stdio upstream found
// among its children.
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { waitFor } from './abort.ts'
import { ROOT, START_TIMEOUT_MS } from './common.ts'
import { childrenOf, cmdlineOf, isAlive, loopbackPortOf } from './proc.ts'
import { addStray, startProcess, type Managed } from './processes.ts'
import type { Settings } from './settings.ts'

export const EVERYTHING = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
export const LOOPBACK_SHIM = path.join(ROOT, 'bench', 'loopback-listen.mjs')
export const TSX_LOADER = import.meta.resolve('tsx')
/** The compiled gateway, as `npm start` and the image run it (`npm run bench` builds it first). */
const GATEWAY_MAIN = path.join(ROOT, 'dist', 'src', 'main.js')

export interface UpstreamSpec {
  name: string
  args: string[]
  /** A string in the upstream's command line, to tell it from the gateway's other children (tsx's esbuild). */
  marker: string
}

export const EVERYTHING_UPSTREAM: UpstreamSpec = { name: 'everything', args: [EVERYTHING, 'stdio'], marker: EVERYTHING }

export interface GatewayOptions {
  file: string
  /** Config lines after the upstream (auth, policies, Redis, …). */
  extra?: string[]
  logLevel?: 'warn' | 'info'
  upstream?: UpstreamSpec
}

export interface StartedGateway {
  process: Managed
  pid: number
  port: number
  url: URL
  upstreamPid: () => number | undefined
  stop: () => Promise<void>
}

export async function startGatewayProcess (settings: Settings, tmpDir: string, options: GatewayOptions): Promise<StartedGateway> {
  const upstream = options.upstream ?? EVERYTHING_UPSTREAM
  const configFile = path.join(tmpDir, options.file)
  writeFileSync(configFile, [
    'listen: { host: 127.0.0.1, port: 0 }',
    `logLevel: ${options.logLevel ?? 'warn'}`,
    'shutdown: { graceMs: 2000, killAfterMs: 1000 }',
    'upstreams:',
    `  - name: ${upstream.name}`,
    '    transport: stdio',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: [${upstream.args.map(a => JSON.stringify(a)).join(', ')}]`,
    ...(options.extra ?? ['']),
    ''
  ].join('\n'))
  const nodeArgs = settings.cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`]
  // node itself runs the gateway: the pid we sample is the gateway.
  const gw = startProcess('switchboard', [...nodeArgs, GATEWAY_MAIN, '--config', configFile], { ...process.env })
  let upstreamPid: number | undefined
  const findUpstream = (): number | undefined => {
    if (upstreamPid !== undefined && isAlive(upstreamPid)) return upstreamPid
    upstreamPid = childrenOf(gw.pid).find(pid => cmdlineOf(pid).includes(upstream.marker))
    if (upstreamPid !== undefined) addStray(upstreamPid)
    return upstreamPid
  }
  try {
    const port = await loopbackPortOf(gw.pid, 'switchboard', gw.alive)
    await waitFor('switchboard /readyz', START_TIMEOUT_MS, async () => {
      if (!gw.alive()) throw new Error('switchboard exited')
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined)
      await res?.body?.cancel()
      return res?.status === 200 ? true : undefined
    })
    if (findUpstream() === undefined) throw new Error('switchboard is ready but has no upstream child process')
    return {
      process: gw,
      pid: gw.pid,
      port,
      url: new URL(`http://127.0.0.1:${port}/mcp`),
      upstreamPid: findUpstream,
      stop: async () => {
        findUpstream()
        await gw.stop()
      }
    }
  } catch (err) {
    await gw.stop()
    throw new Error(`${(err as Error).message}\n--- switchboard output ---\n${gw.output()}`)
  }
}
