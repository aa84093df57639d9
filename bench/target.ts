// What the bench measures: a Target is one driver on one path (a direct connection, a gateway, a
// peer proxy), with the processes whose CPU and memory are read around each phase.

/** A path with the SDK client; `<id>-lean` is the same path with the lean driver. */
export type PathId =
  | 'direct-stdio' | 'direct-stdio-lean' | 'direct-http' | 'direct-http-lean'
  | 'gateway' | 'gateway-lean' | 'gateway-secured' | 'gateway-secured-lean' | 'gateway-redis' | 'gateway-redis-lean'
  | 'gateway-http' | 'gateway-http-lean' | 'haproxy-1' | 'haproxy-3' | 'haproxy-3-cluster'
  | 'supergateway' | 'supergateway-lean' | 'supergateway-sse' | 'supergateway-sse-lean' | 'mcp-proxy' | 'mcp-proxy-lean'
  | 'floor' | 'floor-lean' | 'floor-http' | 'floor-http-lean'
export type GatewayVariant = 'plain' | 'secured' | 'redis' | 'http'
/** sdk: the official SDK client (the "real client" figure); lean: bench/lean-client.ts (lean-stdio-client.ts on path a). */
export type DriverKind = 'sdk' | 'lean'
/**
 * floor: bench/floor-proxy.mjs (to stdio) or bench/floor-http-proxy.mjs (to Streamable HTTP), the least
 * a Node proxy can do per call (a yardstick, not a peer).
 */
export type Role = 'direct' | 'gateway' | 'peer' | 'floor'

/** The id of a path with the given driver: `<id>` for the SDK client, `<id>-lean` for the lean one. */
export function withDriver (id: PathId, kind: DriverKind): PathId {
  return kind === 'sdk' ? id : `${id}-lean` as PathId
}

/** The answer to one tools/call, as much of it as the bench checks. */
export interface ToolAnswer { text?: string, isError: boolean, raw: unknown }

export interface Driver {
  kind: DriverKind
  callTool: (name: string, args: Record<string, unknown>, timeoutMs: number) => Promise<ToolAnswer>
  close: () => Promise<void>
}

export interface Target {
  id: PathId
  label: string
  role: Role
  tool: string
  driver: Driver
  /** The server-everything process answering this path's calls. */
  upstreamPid: () => number | undefined
  /** Several upstreams (one per replica behind HAProxy): CPU is summed over them. */
  upstreamPids?: () => number[]
  /**
   * The proxy's own processes (the gateway, its replicas, or a peer's process tree without its
   * upstreams), read at each phase boundary; undefined on the direct paths.
   */
  proxyPids?: () => number[]
  /** The Redis processes behind the path (sessions in Redis): their CPU per call is reported apart. */
  redisPids?: () => number[]
  /** The processes whose peak RSS is reported (the gateway(s), or the peer's own node process). */
  rssPids?: number[]
  gatewayPid?: number
  /** In-flight levels of the concurrent phases when not the run's default (the scaling curve). */
  concurrency?: number[]
}

/** The first text item of a tool result, if any. */
export function firstText (result: unknown): string | undefined {
  const content = (result as { content?: unknown } | null)?.content
  const first = Array.isArray(content) ? content[0] as { type?: unknown, text?: unknown } | undefined : undefined
  return first?.type === 'text' && typeof first.text === 'string' ? first.text : undefined
}
