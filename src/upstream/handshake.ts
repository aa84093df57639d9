import type { UpstreamConfig } from '../config/schema.ts'
import { SwitchboardError, isSwitchboardError } from '../errors.ts'
import { RpcError, isRecord } from '../protocol/json-rpc.ts'
import { META_SERVER_INFO, MODERN_PROTOCOL_VERSIONS } from '../protocol/modern.ts'
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/versions.ts'
import type { RpcPeer } from './rpc-peer.ts'
import type { UpstreamTransport } from './upstream-transport.ts'

/** What a connection learned when it was set up, in either era. */
export interface Handshake {
  /** modern: 2026-07-28, stateless (server/discover); legacy: initialize, a session. */
  era: 'legacy' | 'modern'
  version: string
  capabilities: Record<string, unknown>
  serverInfo: Record<string, unknown> | undefined
}

export interface HandshakeClient {
  clientInfo: { name: string, version: string }
  clientCapabilities: Record<string, unknown>
  /** The upstream's tools' `x-mcp-header` arguments, for the `Mcp-Param-*` headers of 2026-07-28. */
  mirroredParams?: (tool: string) => Readonly<Record<string, string>>
}

const MODERN = MODERN_PROTOCOL_VERSIONS[0] as string

/**
 * Sets up a connection as `config.protocol` says. auto, on a transport that can speak 2026-07-28:
 * `server/discover` first, as the official SDK client does, and the modern era when the upstream
 * offers it; an upstream that answers anything else (an HTTP error status, a JSON-RPC error, no
 * 2026-07-28 among its versions) speaks an older revision and is initialized. A network failure is
 * a failed attempt, not a verdict.
 */
export async function handshake<C> (peer: RpcPeer<C>, transport: UpstreamTransport, config: UpstreamConfig, client: HandshakeClient, timeoutMs: number): Promise<Handshake> {
  if (config.protocol !== '2025-11-25' && transport.setModern !== undefined) {
    const modern = await discover(peer, transport, client, timeoutMs, config.protocol === '2026-07-28')
    if (modern !== undefined) return modern
  }
  const init = await peer.request('initialize', {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: client.clientCapabilities,
    clientInfo: client.clientInfo
  }, { timeoutMs })
  const version = init.protocolVersion
  if (typeof version !== 'string' || !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `unsupported protocol version ${String(version)}`)
  }
  transport.setProtocolVersion?.(version)
  await peer.notify('notifications/initialized')
  return { era: 'legacy', version, capabilities: isRecord(init.capabilities) ? init.capabilities : {}, serverInfo: isRecord(init.serverInfo) ? init.serverInfo : undefined }
}

async function discover<C> (peer: RpcPeer<C>, transport: UpstreamTransport, client: HandshakeClient, timeoutMs: number, required: boolean): Promise<Handshake | undefined> {
  const setModern = transport.setModern?.bind(transport)
  setModern?.({ version: MODERN, clientInfo: client.clientInfo, clientCapabilities: client.clientCapabilities, mirroredParams: client.mirroredParams })
  let result: Record<string, unknown>
  try {
    result = await peer.request('server/discover', {}, { timeoutMs })
  } catch (err: unknown) {
    setModern?.(undefined)
    // A refused credential (401, 403) says nothing of the era: it fails the attempt as it is, so the
    // caller's connection renews its token (or closes) rather than settling for the older revision.
    const answered = err instanceof RpcError || isSwitchboardError(err, 'SB_ERR_UPSTREAM_HTTP')
    if (answered && !required) return undefined
    if (answered) throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream refused server/discover (${(err as Error).message}); it does not speak 2026-07-28`)
    throw err
  }
  const versions = Array.isArray(result.supportedVersions) ? result.supportedVersions : []
  if (!versions.includes(MODERN)) {
    setModern?.(undefined)
    if (!required) return undefined
    throw new SwitchboardError('SB_ERR_UPSTREAM_PROTOCOL', `the upstream does not offer 2026-07-28 (it offers ${JSON.stringify(versions)})`)
  }
  const meta = isRecord(result._meta) ? result._meta : {}
  const serverInfo = isRecord(meta[META_SERVER_INFO]) ? meta[META_SERVER_INFO] : isRecord(result.serverInfo) ? result.serverInfo : undefined
  return { era: 'modern', version: MODERN, capabilities: isRecord(result.capabilities) ? result.capabilities : {}, serverInfo }
}
