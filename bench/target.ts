import type { Client } from '@modelcontextprotocol/client'

/** One way of reaching the upstream that the bench measures: a direct connection, or a gateway path. */
export type PathId = 'direct-stdio' | 'direct-http' | 'gateway' | 'gateway-secured' | 'gateway-redis' | 'haproxy-1' | 'haproxy-3'
export type GatewayVariant = 'plain' | 'secured' | 'redis'

export interface Target {
  id: PathId
  label: string
  tool: string
  client: Client
  /** The server-everything process answering this path's calls. */
  upstreamPid: () => number | undefined
  gatewayPid?: number
  /** Several gateway replicas (behind HAProxy): CPU is summed over them, and over their upstreams. */
  replicaPids?: number[]
  upstreamPids?: () => number[]
  close: () => Promise<void>
}
