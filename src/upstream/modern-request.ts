import { isRecord } from '../protocol/json-rpc.ts'
import { META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, encodeHeaderValue, mcpNameHeader, paramHeaderText } from '../protocol/modern.ts'
import type { ModernEnvelope } from './upstream-transport.ts'

// How a request to a 2026-07-28 upstream is shaped: the envelope in its _meta, and its own headers.

/** A 2026-07-28 request's own headers: its method, its name, and the arguments its tool mirrors. */
export function modernHeaders (msg: Record<string, unknown>, envelope: ModernEnvelope): { method: string, name: string | undefined, params?: Record<string, string> } {
  const method = msg.method as string
  const params = isRecord(msg.params) ? msg.params : undefined
  const name = mcpNameHeader(method, params)
  if (method !== 'tools/call' || typeof params?.name !== 'string' || envelope.mirroredParams === undefined) return { method, name }
  const args = isRecord(params.arguments) ? params.arguments : {}
  const mirrored: Record<string, string> = {}
  for (const [arg, header] of Object.entries(envelope.mirroredParams(params.name))) {
    const text = paramHeaderText(args[arg])
    if (text !== undefined) mirrored[`mcp-param-${header.toLowerCase()}`] = encodeHeaderValue(text)
  }
  return { method, name, params: mirrored }
}

/** A request with the 2026-07-28 envelope in its `_meta`, where the request does not bring its own. */
export function enveloped (msg: Record<string, unknown>, envelope: ModernEnvelope): Record<string, unknown> {
  const params = isRecord(msg.params) ? msg.params : {}
  const meta = isRecord(params._meta) ? params._meta : {}
  return {
    ...msg,
    params: {
      ...params,
      _meta: {
        ...meta,
        [META_PROTOCOL_VERSION]: envelope.version,
        [META_CLIENT_INFO]: meta[META_CLIENT_INFO] ?? envelope.clientInfo,
        [META_CLIENT_CAPABILITIES]: meta[META_CLIENT_CAPABILITIES] ?? envelope.clientCapabilities
      }
    }
  }
}
