// MCP 2026-07-28 ("modern", stateless) on the wire: how a request says it is one, and the checks the
// revision requires before it is served (its validation order: header/body mismatch, the `_meta`
// envelope, the version, the required headers). Pure: no HTTP framework, no I/O.
import { type JsonRpcMessage, RPC, isRecord, isRequest } from './json-rpc.ts'

export const MODERN_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28']
/** The first revision of the modern era: a later one is modern too, even when not supported. */
const FIRST_MODERN_VERSION = '2026-07-28'

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion'
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo'
/** Deprecated in 2026-07-28; without it a server sends no notifications/message. */
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'
/** The 2026-07-28 tasks extension: declared in `capabilities.extensions` by servers and clients that speak it. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

export const MODERN_ERROR = {
  HEADER_MISMATCH: -32020,
  MISSING_REQUIRED_CLIENT_CAPABILITY: -32021,
  UNSUPPORTED_PROTOCOL_VERSION: -32022
} as const

/** Methods a 2025-11-25 session has and the modern era removed: 404 with -32601 when claimed modern. */
export const REMOVED_METHODS: ReadonlySet<string> = new Set([
  'initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe'
])

/** Methods whose request names its target in `Mcp-Name`, and the param it mirrors. */
const NAME_PARAM: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId'
}

/** The `Mcp-Name` a request of `method` must carry, encoded for the header; undefined when it needs none. */
export function mcpNameHeader (method: string, params: Record<string, unknown> | undefined): string | undefined {
  const param = NAME_PARAM[method]
  const value = param === undefined ? undefined : params?.[param]
  return typeof value === 'string' ? encodeHeaderValue(value) : undefined
}

/** Plain printable ASCII (without edge whitespace) as is; anything else as `=?base64?…?=` of its UTF-8. */
export function encodeHeaderValue (value: string): string {
  return /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !value.startsWith('=?base64?') ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`
}

export function isModernVersion (version: string): boolean {
  return version >= FIRST_MODERN_VERSION
}

/** What a served modern request carries about its client, from its `_meta` envelope. */
export interface ModernClaim {
  version: string
  clientCapabilities: Record<string, unknown>
  clientInfo: Record<string, unknown> | undefined
  /** The least severe log message the client wants; none at all when undefined. */
  logLevel: string | undefined
}

/** A modern request refused before it is served: HTTP status, JSON-RPC code, message and data. */
export interface ModernRefusal { status: number, code: number, message: string, data?: Record<string, unknown> }

export type Era =
  | { era: 'legacy' }
  | { era: 'modern', claim: ModernClaim }
  | { era: 'modern', refusal: ModernRefusal }

type Headers = Readonly<Record<string, string | string[] | undefined>>

function header (headers: Headers, name: string): string | undefined {
  const value = headers[name]
  const one = Array.isArray(value) ? value[0] : value
  // Servers compare values without the optional whitespace HTTP allows around them.
  return one === undefined || !/^[ \t]|[ \t]$/.test(one) ? one : one.replace(/^[ \t]+|[ \t]+$/g, '')
}

/** `=?base64?…?=` carries a value that is not plain printable ASCII; anything else is as sent. */
function decodeHeaderValue (value: string): string | undefined {
  const match = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/.exec(value)
  if (match === null) return value
  const bytes = Buffer.from(match[1] as string, 'base64')
  if (bytes.toString('base64') !== match[1]) return undefined
  const text = new TextDecoder('utf-8', { fatal: true })
  try {
    return text.decode(bytes)
  } catch {
    return undefined
  }
}

const refusal = (status: number, code: number, message: string, data?: Record<string, unknown>): Era => ({ era: 'modern', refusal: { status, code, message, ...(data === undefined ? {} : { data }) } })

/**
 * The era of one POSTed message, decided by its body as the official SDK does: a request or
 * notification whose `params._meta` holds the protocol version claim is modern; without the claim
 * it is legacy, unless its MCP-Protocol-Version header names a modern revision (then its envelope
 * is missing). A modern request that fails a check is refused with the revision's status and code.
 */
export function classifyMessage (message: JsonRpcMessage, headers: Headers): Era {
  if (!('method' in message)) return { era: 'legacy' }
  const params = isRecord(message.params) ? message.params : undefined
  const meta = isRecord(params?._meta) ? params._meta : undefined
  const headerVersion = header(headers, 'mcp-protocol-version')
  if (meta === undefined || !(META_PROTOCOL_VERSION in meta)) {
    if (headerVersion !== undefined && isModernVersion(headerVersion) && message.method === 'initialize') {
      return refusal(400, MODERN_ERROR.HEADER_MISMATCH, `Header mismatch: initialize is a 2025-11-25 request, but MCP-Protocol-Version says ${headerVersion}`, { mismatch: { header: 'MCP-Protocol-Version', body: 'initialize' } })
    }
    if (headerVersion !== undefined && isModernVersion(headerVersion)) {
      return refusal(400, RPC.INVALID_PARAMS, `Invalid params: a ${headerVersion} request carries _meta["${META_PROTOCOL_VERSION}"] and _meta["${META_CLIENT_CAPABILITIES}"]`, { envelope: { missing: [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES] } })
    }
    return { era: 'legacy' }
  }
  const version = meta[META_PROTOCOL_VERSION]
  const method = header(headers, 'mcp-method')
  if (typeof version === 'string' && headerVersion !== undefined && headerVersion !== version) {
    return refusal(400, MODERN_ERROR.HEADER_MISMATCH, `Header mismatch: MCP-Protocol-Version ${headerVersion} but _meta says ${version}`, { mismatch: { header: 'MCP-Protocol-Version', body: version } })
  }
  if (method !== undefined && method !== message.method) {
    return refusal(400, MODERN_ERROR.HEADER_MISMATCH, `Header mismatch: Mcp-Method ${method} but the body's method is ${message.method}`, { mismatch: { header: 'Mcp-Method', body: message.method } })
  }
  const capabilities = meta[META_CLIENT_CAPABILITIES]
  if (typeof version !== 'string' || version === '') {
    return refusal(400, RPC.INVALID_PARAMS, `Invalid params: _meta["${META_PROTOCOL_VERSION}"] must be a string`, { envelope: { key: META_PROTOCOL_VERSION, problem: 'not a string' } })
  }
  if (!isRecord(capabilities)) {
    return refusal(400, RPC.INVALID_PARAMS, `Invalid params: _meta["${META_CLIENT_CAPABILITIES}"] must be an object`, { envelope: { key: META_CLIENT_CAPABILITIES, problem: capabilities === undefined ? 'missing' : 'not an object' } })
  }
  if (!MODERN_PROTOCOL_VERSIONS.includes(version)) {
    return refusal(400, MODERN_ERROR.UNSUPPORTED_PROTOCOL_VERSION, `Unsupported protocol version: ${version}`, { supported: [...MODERN_PROTOCOL_VERSIONS], requested: version })
  }
  if (headerVersion === undefined) return refusal(400, MODERN_ERROR.HEADER_MISMATCH, 'Header mismatch: the MCP-Protocol-Version header is required')
  if (isRequest(message)) {
    if (method === undefined) return refusal(400, MODERN_ERROR.HEADER_MISMATCH, 'Header mismatch: the Mcp-Method header is required')
    const nameParam = NAME_PARAM[message.method]
    if (nameParam !== undefined) {
      const sent = header(headers, 'mcp-name')
      const expected = params?.[nameParam]
      if (sent === undefined) return refusal(400, MODERN_ERROR.HEADER_MISMATCH, `Header mismatch: ${message.method} requires the Mcp-Name header`)
      const name = decodeHeaderValue(sent)
      if (name === undefined || name !== expected) {
        return refusal(400, MODERN_ERROR.HEADER_MISMATCH, `Header mismatch: Mcp-Name does not match params.${nameParam}`, { mismatch: { header: 'Mcp-Name', body: typeof expected === 'string' ? expected : null } })
      }
    }
  }
  const clientInfo = meta[META_CLIENT_INFO]
  const logLevel = meta[META_LOG_LEVEL]
  return { era: 'modern', claim: { version, clientCapabilities: capabilities, clientInfo: isRecord(clientInfo) ? clientInfo : undefined, logLevel: typeof logLevel === 'string' ? logLevel : undefined } }
}

/**
 * The arguments of a tool that its input schema mirrors into headers (`x-mcp-header`, SEP-2243):
 * argument name → the `<Name>` of its `Mcp-Param-<Name>` header. Empty for most tools.
 */
export function mirroredParams (tool: Readonly<Record<string, unknown>> | undefined): Record<string, string> {
  const schema = tool?.inputSchema
  const properties = isRecord(schema) && isRecord(schema.properties) ? schema.properties : {}
  const mirrored: Record<string, string> = {}
  for (const [arg, property] of Object.entries(properties)) {
    const header = isRecord(property) ? property['x-mcp-header'] : undefined
    if (typeof header === 'string' && /^[A-Za-z0-9-]+$/.test(header)) mirrored[arg] = header
  }
  return mirrored
}

/** An argument's value as its header carries it: strings as they are, numbers and booleans as JSON. */
export function paramHeaderText (value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined
}

/**
 * A tools/call's `Mcp-Param-*` headers against its arguments: each mirrored argument that is given
 * must come with its header, equal once decoded (plain, or a valid `=?base64?…?=`); a header without
 * its argument is a mismatch too. undefined: they agree.
 */
export function checkParamHeaders (args: unknown, mirrored: Readonly<Record<string, string>>, headers: Headers): ModernRefusal | undefined {
  const given = isRecord(args) ? args : {}
  for (const [arg, name] of Object.entries(mirrored)) {
    const sent = header(headers, `mcp-param-${name.toLowerCase()}`)
    const expected = paramHeaderText(given[arg])
    if (sent === undefined && expected === undefined) continue
    const decoded = sent === undefined ? undefined : decodeHeaderValue(sent)
    if (decoded === undefined || decoded !== expected) {
      const why = sent === undefined ? 'is missing' : decoded === undefined ? 'is not valid' : expected === undefined ? 'has no argument' : 'does not match the argument'
      return { status: 400, code: MODERN_ERROR.HEADER_MISMATCH, message: `Header mismatch: Mcp-Param-${name} ${why} (${arg})`, data: { mismatch: { header: `Mcp-Param-${name}`, argument: arg } } }
    }
  }
  return undefined
}
