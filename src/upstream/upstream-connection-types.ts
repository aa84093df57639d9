import type { Principal } from '../auth/principal.ts'
import type { UpstreamConfig } from '../config/schema.ts'
import type { ProcessLimits } from '../config/process-schema.ts'
import type { CredentialProvider } from '../credentials/credential-provider.ts'
import type { Logger } from 'pino'
import type { JsonRpcMessage, JsonRpcRequest } from '../protocol/json-rpc.ts'
import type { CircuitState } from './circuit-breaker.ts'
import type { UpstreamLists } from './upstream-lists.ts'
import type { UpstreamConnection } from './upstream-connection.ts'

// What an upstream connection is built with and reports to: its options, its listener, the calls it carries.

/**
 * awaiting_user: never started, as it has no credential of its own (per-user OAuth without a listing one): its principals' connections serve.
 * stopped: a stdio process not running by choice (lazy and not yet called, or idle past idleStopMs); the next request starts it.
 */
export type UpstreamState = 'connecting' | 'ready' | 'backoff' | 'closed' | 'awaiting_user' | 'stopped'

/** A forwarded request in flight, so messages the upstream sends meanwhile can find their client. */
export interface ActiveCall {
  sessionId: string
  /** Sends on the stream of the downstream request that caused this call. */
  related?: (message: JsonRpcMessage) => void
  /**
   * The client: a 2026-07-28 upstream is told its capabilities in each request, and a client of
   * that era answers the upstream's input_required itself.
   */
  client?: { clientCapabilities: Readonly<Record<string, unknown>>, protocolVersion?: string, logLevel?: string }
}

export interface UpstreamListener {
  /** The upstream's lists, or undefined when it went away. Only connections that list report. */
  lists: (upstream: string, lists: UpstreamLists | undefined) => void
  state: (upstream: string, state: UpstreamState) => void
  reconnect: (upstream: string) => void
  /** The upstream's circuit breaker changed state. */
  circuit?: (upstream: string, state: CircuitState) => void
  /**
   * A notification other than progress and list changes. `call`: the call on whose stream it
   * arrived, where the transport tells (HTTP upstreams); otherwise the listener must attribute it.
   */
  notification?: (connection: UpstreamConnection, method: string, params: Record<string, unknown> | undefined, call?: ActiveCall) => void
  /** A request from the upstream (sampling, elicitation, roots); ping is answered by the peer. `call` as above. */
  request?: (connection: UpstreamConnection, request: JsonRpcRequest, signal: AbortSignal, call?: ActiveCall) => Promise<Record<string, unknown>>
  /** Connected and initialized: state that lives in the upstream (log level, subscriptions) is re-applied here. */
  ready?: (connection: UpstreamConnection) => void
}

export interface UpstreamConnectionOptions {
  config: UpstreamConfig
  log: Logger
  listener: UpstreamListener
  killAfterMs: number
  baseEnv: Readonly<Record<string, string | undefined>>
  clientInfo: { name: string, version: string }
  /** What the gateway declares to this upstream as its client. */
  clientCapabilities?: Record<string, unknown>
  /** The downstream session this connection serves alone (isolation: session). */
  owner?: string
  /** Whom it acts for toward the upstream (undefined: the gateway itself), and where its credentials come from. */
  principal?: Principal
  credentials?: CredentialProvider
  /** false: do not list (a session's own connection; the catalog comes from the shared one). */
  listing?: boolean
  /** Told each time one of its calls ends (a principal's connection idles out after the last). */
  onCallEnd?: (connection: UpstreamConnection) => void
  healthCheckMs?: number
  random?: () => number
  /**
   * Its health, for the upstream's circuit breaker: false once per lost connection or failed
   * attempt to open one (`cause`: why, when known), true once connected and initialized. Never
   * called once retired, nor when a caller's connection closes on its credential (onUnusable).
   */
  onHealth?: (healthy: boolean, cause?: unknown) => void
  /**
   * It acts for a caller and closed for want of a usable credential (see isCredentialFailure): it
   * will not reconnect; whoever holds it forgets it, so that the caller's next call opens another.
   */
  onUnusable?: (connection: UpstreamConnection) => void
  /** stdio: the resource limits its process runs under. */
  limits?: ProcessLimits | undefined
  /** A request found it stopped: whoever manages its process starts it (process-lifecycle.ts). */
  onDemand?: (connection: UpstreamConnection) => void
}
