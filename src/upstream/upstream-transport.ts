import type { RequestId } from '../protocol/json-rpc.ts'
import type { RawMessage } from '../protocol/raw-answer.ts'

/**
 * What the upstream side needs of a transport. The SDK's transports fit it; ours add what a
 * gateway needs beyond them: which request a message arrived for, and giving up one request.
 */
export interface UpstreamTransport {
  start: () => Promise<void>
  send: (message: unknown) => Promise<void>
  /** `keepSession`: the upstream's session (if any) is left for it to expire, not ended (there is no credential to end it with). */
  close: (options?: CloseOptions) => Promise<void>
  setProtocolVersion?: (version: string) => void
  /** A child process's id (stdio), while it runs; the admin API shows it. */
  readonly pid?: number | undefined
  /** Only transports that can speak 2026-07-28 (Streamable HTTP) have it; undefined goes back to 2025-11-25. */
  setModern?: (envelope: ModernEnvelope | undefined) => void
  /** The request was given up (timeout, cancellation): release whatever still carries it. */
  abandon?: (id: RequestId) => void
  /** `related`: the request on whose stream the message arrived, where the transport knows it. */
  onmessage?: (message: unknown, related?: RequestId) => void
  /**
   * Offered each message before the transport parses it, as text (HTTP) or as the bytes it arrived
   * in (stdio): true when the peer took it as the answer to a request whose result it relays as it
   * arrived (raw-result.ts); the transport then does nothing more with it. Anything else it parses
   * and reports as ever.
   */
  takeRaw?: (message: string | RawMessage, related?: RequestId) => boolean
  onclose?: () => void
  /** Set before onclose when the end has a cause the calls in flight should see (a stdio resource limit). */
  readonly closeError?: Error | undefined
  onerror?: (error: Error) => void
  /** The answer to this request can no longer arrive (its stream ended without one). */
  onlost?: (id: RequestId, error: Error) => void
}

export interface CloseOptions { keepSession?: boolean }

/** 2026-07-28: what every request says of its client in `_meta` (what a request brings itself is kept). */
export interface ModernEnvelope {
  version: string
  clientInfo: Record<string, unknown>
  clientCapabilities: Record<string, unknown>
  /** The arguments of one of the upstream's tools that go in `Mcp-Param-*` headers too (its `x-mcp-header`s). */
  mirroredParams?: (tool: string) => Readonly<Record<string, string>>
}
