// Starting a Switchboard gateway for the bench: a temporary config (loopback, port 0), the compiled
// gateway as a child process, ready on /readyz, with its stdio upstreams found among its children
// (or its one Streamable HTTP upstream, a process the bench started).
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { waitFor } from './abort.ts'
import { ROOT, START_TIMEOUT_MS } from './common.ts'
import { childrenOf, cmdlineOf, isAlive, loopbackPortOf, statusKb } from './proc.ts'
import { addStray, startProcess, type Managed } from './processes.ts'
import type { Settings } from './settings.ts'

export const EVERYTHING = path.join(ROOT, 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js')
export const LOOPBACK_SHIM = path.join(ROOT, 'bench', 'loopback-listen.mjs')
export const TSX_LOADER = import.meta.resolve('tsx')
/**
 * The compiled gateway, as `npm start` and the image run it (`npm run bench` builds it first).
 * BENCH_GATEWAY_MAIN runs another build instead (an earlier commit's, for a before/after in the same conditions).
 */
const GATEWAY_MAIN = process.env.BENCH_GATEWAY_MAIN ?? path.join(ROOT, 'dist', 'src', 'main.js')
/** The V8 flags `npm start` and the image run the gateway with (test/unit/deploy/docker.test.ts keeps the three equal). */
export const GATEWAY_NODE_FLAGS = ['--max-semi-space-size=32']

/**
 * BENCH_GATEWAY_NODE_FLAGS (space-separated) replaces GATEWAY_NODE_FLAGS for one run, so that an A/B
 * of V8 flags is two runs of the same bench ("" runs with Node's defaults).
 */
function gatewayNodeFlags (): string[] {
  const flags = process.env.BENCH_GATEWAY_NODE_FLAGS
  return flags === undefined ? GATEWAY_NODE_FLAGS : flags.split(' ').filter(f => f !== '')
}

export interface StdioUpstreamSpec {
  name: string
  args: string[]
  /** A string in the upstream's command line, to tell it from the gateway's other children. */
  marker: string
  env?: Record<string, string>
}

/** An upstream over Streamable HTTP: a server the bench started itself (pid), at url. */
export interface HttpUpstreamSpec { name: string, url: string, pid: number }

export type UpstreamSpec = StdioUpstreamSpec | HttpUpstreamSpec

export const EVERYTHING_UPSTREAM: StdioUpstreamSpec = { name: 'everything', args: [EVERYTHING, 'stdio'], marker: EVERYTHING }

export interface GatewayOptions {
  file: string
  /** Config lines after the upstreams (auth, policies, Redis, …). */
  extra?: string[]
  logLevel?: 'warn' | 'info'
  /** Default: one server-everything over stdio. */
  upstreams?: UpstreamSpec[]
  /** Flags for node itself (e.g. --trace-gc). */
  nodeArgs?: string[]
  /** false: ready without an upstream process (none configured, or lazy ones not started). */
  upstreamProcess?: boolean
}

function upstreamLines (u: UpstreamSpec): string[] {
  if ('url' in u) return [`  - name: ${u.name}`, '    transport: streamable-http', `    url: ${JSON.stringify(u.url)}`]
  return [
    `  - name: ${u.name}`,
    '    transport: stdio',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: [${u.args.map(a => JSON.stringify(a)).join(', ')}]`,
    ...(u.env === undefined ? [] : [`    env: ${JSON.stringify(u.env)}`])
  ]
}

export interface StartedGateway {
  process: Managed
  pid: number
  port: number
  url: URL
  /** VmRSS (KiB) read as soon as /readyz answered 200. */
  rssAtReadyKb?: number
  /** The first upstream's process (a child of the gateway, or the HTTP server the bench started). */
  upstreamPid: () => number | undefined
  stop: () => Promise<void>
}

export async function startGatewayProcess (settings: Settings, tmpDir: string, options: GatewayOptions): Promise<StartedGateway> {
  const upstreams = options.upstreams ?? [EVERYTHING_UPSTREAM]
  const configFile = path.join(tmpDir, options.file)
  writeFileSync(configFile, [
    'listen: { host: 127.0.0.1, port: 0 }',
    `logLevel: ${options.logLevel ?? 'warn'}`,
    'shutdown: { graceMs: 2000, killAfterMs: 1000 }',
    // The load generators are one principal: caps far above any phase (10,000 idle sessions, 256 calls in flight).
    'limits: { sessionsPerPrincipal: 1000000, inFlightPerPrincipal: 1000000 }',
    upstreams.length === 0 ? 'upstreams: []' : 'upstreams:',
    ...upstreams.flatMap(upstreamLines),
    ...(options.extra ?? ['']),
    ''
  ].join('\n'))
  const nodeArgs = [...gatewayNodeFlags(), ...(options.nodeArgs ?? []), ...(settings.cpuProfDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfDir}`])]
  // node itself runs the gateway: the pid we sample is the gateway.
  const gw = startProcess('switchboard', [...nodeArgs, GATEWAY_MAIN, '--config', configFile], { ...process.env })
  const first = upstreams[0]
  const markers = upstreams.flatMap(u => 'marker' in u ? [u.marker] : [])
  let upstreamPid: number | undefined = first !== undefined && 'pid' in first ? first.pid : undefined
  // Every stdio upstream is a stray to kill if it outlives the gateway; the first is the one measured.
  const findUpstream = (): number | undefined => {
    if (upstreamPid !== undefined && isAlive(upstreamPid)) return upstreamPid
    const mine = childrenOf(gw.pid).filter(pid => markers.some(m => cmdlineOf(pid).includes(m)))
    for (const pid of mine) addStray(pid)
    upstreamPid = mine.find(pid => first !== undefined && 'marker' in first && cmdlineOf(pid).includes(first.marker))
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
    const rssAtReadyKb = statusKb(gw.pid, 'VmRSS')
    if (options.upstreamProcess !== false && findUpstream() === undefined) throw new Error('switchboard is ready but has no upstream process')
    return {
      process: gw,
      pid: gw.pid,
      port,
      url: new URL(`http://127.0.0.1:${port}/mcp`),
      rssAtReadyKb,
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
