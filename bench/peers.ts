// The peers, measured in the same run over the same upstream (server-everything stdio) with the same
// drivers: supergateway (Streamable HTTP, and SSE under the SDK client) and punkpeye's mcp-proxy,
// each run as `node <its bin>` from node_modules with the flags that suit it best for one
// request/response session (see bench/README.md).
import path from 'node:path'
import { ROOT, packageVersion } from './common.ts'
import { connectHttpDriver } from './drivers.ts'
import { EVERYTHING, LOOPBACK_SHIM } from './gateway.ts'
import { onCleanup } from './lifecycle.ts'
import { httpDriverOptions } from './paths.ts'
import { argvOf, loopbackPortOf, treeOf } from './proc.ts'
import { addStray, startProcess, type Managed } from './processes.ts'
import type { Settings } from './settings.ts'
import { withDriver, type Driver, type DriverKind, type Target } from './target.ts'

export type PeerName = 'supergateway' | 'supergateway-sse' | 'mcp-proxy' | 'floor'

interface PeerSpec {
  /** The npm package, for its version (none: a script of the bench's own). */
  pkg?: string
  label: (version: string) => string
  args: (upstream: string[]) => string[]
  /** Where the drivers connect: the SDK client with the matching transport, the lean one likewise. */
  endpoint: { path: string, transport: 'streamableHttp' | 'sse' }
}

const SUPERGATEWAY = path.join(ROOT, 'node_modules', 'supergateway', 'dist', 'index.js')
const stdioCommand = (upstream: string[]): string => upstream.map(a => JSON.stringify(a)).join(' ')

const PEERS: Record<PeerName, PeerSpec> = {
  // Stateful Streamable HTTP: one upstream process per session (stateless starts one per request).
  // Its HTTP listen() takes no host, so the loopback shim pins it; --logLevel none drops its line
  // per message (the gateway runs at warn).
  supergateway: {
    pkg: 'supergateway',
    label: v => `supergateway ${v} (Streamable HTTP, stateful)`,
    args: upstream => ['--import', LOOPBACK_SHIM, SUPERGATEWAY, '--stdio', stdioCommand(upstream),
      '--outputTransport', 'streamableHttp', '--stateful', '--port', '0', '--logLevel', 'none'],
    endpoint: { path: '/mcp', transport: 'streamableHttp' }
  },
  // Its default output, and its cheapest in shared/reference/performance.md; one upstream for all
  // sessions, each of which receives every answer (so one process per driver, see startPeer).
  'supergateway-sse': {
    pkg: 'supergateway',
    label: v => `supergateway ${v} (SSE)`,
    args: upstream => ['--import', LOOPBACK_SHIM, SUPERGATEWAY, '--stdio', stdioCommand(upstream),
      '--outputTransport', 'sse', '--port', '0', '--logLevel', 'none'],
    endpoint: { path: '/sse', transport: 'sse' }
  },
  // Streamable HTTP only (no SSE endpoint), stateful (stateless builds a server per request), no
  // resumability event store (request/response only); one upstream shared by every session.
  'mcp-proxy': {
    pkg: 'mcp-proxy',
    label: v => `mcp-proxy ${v} (stream, stateful, no event store)`,
    args: upstream => [path.join(ROOT, 'node_modules', 'mcp-proxy', 'dist', 'bin', 'mcp-proxy.mjs'),
      '--host', '127.0.0.1', '--port', '0', '--server', 'stream', '--no-eventStore', '--', ...upstream],
    endpoint: { path: '/mcp', transport: 'streamableHttp' }
  },
  // Not a peer: the bare minimum (node:http, stdio writes coalesced per turn, nothing checked), so
  // the report can say how much of each proxy's CPU per call any Node proxy pays on this machine.
  floor: {
    label: () => 'floor: bare node:http → stdio (bench/floor-proxy.mjs)',
    args: upstream => [path.join(ROOT, 'bench', 'floor-proxy.mjs'), ...upstream],
    endpoint: { path: '/mcp', transport: 'streamableHttp' }
  }
}

export function peerVersion (name: PeerName): string {
  const pkg = PEERS[name].pkg
  return pkg === undefined ? '' : packageVersion(pkg)
}

// `node <server-everything> stdio` itself: not a shell wrapping it, nor the peer, whose own command
// line names it too.
const isUpstream = (pid: number): boolean => argvOf(pid)[1] === EVERYTHING

/** The server-everything processes under the peer (one per session for supergateway stateful). */
function upstreamsOf (peer: Managed): number[] {
  return treeOf(peer.pid).filter(isUpstream)
}

/**
 * Starts one peer process and opens a session on it for each driver kind given. The peer's CPU is
 * its whole process tree (its node process, a shell wrapper if any) minus every upstream in it,
 * read at each phase boundary.
 */
async function startPeerProcess (settings: Settings, name: PeerName, drivers: DriverKind[]): Promise<Target[]> {
  const spec = PEERS[name]
  const version = peerVersion(name)
  const peer = startProcess(name, spec.args([process.execPath, EVERYTHING, 'stdio']), { ...process.env })
  onCleanup(name, async () => {
    for (const pid of upstreamsOf(peer)) addStray(pid)
    await peer.stop()
  })
  const proxyPids = (): number[] => treeOf(peer.pid).filter(pid => !isUpstream(pid))
  const targets: Target[] = []
  try {
    const port = await loopbackPortOf(peer.pid, name, peer.alive)
    const url = new URL(`http://127.0.0.1:${port}${spec.endpoint.path}`)
    const sse = spec.endpoint.transport === 'sse'
    for (const kind of drivers) {
      const before = new Set(upstreamsOf(peer))
      const driver: Driver = await connectHttpDriver(kind, url, 'echo', name, httpDriverOptions(settings, { sse }))
      onCleanup(`${name} ${kind} driver`, driver.close)
      // This session's upstream: the one that appeared with it, else the one every session shares.
      const all = upstreamsOf(peer)
      const mine = all.find(pid => !before.has(pid)) ?? all[0]
      if (mine === undefined) throw new Error(`${name} answers but has no server-everything process under it`)
      addStray(mine)
      targets.push({
        id: withDriver(name, kind),
        label: spec.label(version),
        role: name === 'floor' ? 'floor' : 'peer',
        tool: 'echo',
        driver,
        upstreamPid: () => mine,
        proxyPids,
        rssPids: [peer.pid]
      })
    }
  } catch (err) {
    await peer.stop()
    throw new Error(`${(err as Error).message}\n--- ${name} output ---\n${peer.output()}`)
  }
  return targets
}

/**
 * A peer with one session per driver kind, like the gateway path c. supergateway's SSE output sends
 * every upstream message to every session, so there each driver gets a process of its own: the other
 * session would otherwise receive (and cost) every answer too.
 */
export async function startPeer (settings: Settings, name: PeerName, drivers: DriverKind[]): Promise<Target[]> {
  if (PEERS[name].endpoint.transport !== 'sse') return await startPeerProcess(settings, name, drivers)
  const targets: Target[] = []
  for (const kind of drivers) targets.push(...await startPeerProcess(settings, name, [kind]))
  return targets
}
