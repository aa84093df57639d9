import type { RequestId } from '../protocol/json-rpc.ts'

/**
 * What the upstream side needs of a transport. The SDK's transports fit it; ours add what a
 * gateway needs beyond them: which request a message arrived for, and giving up one request.
 */
export interface UpstreamTransport {
  start: () => Promise<void>
  send: (message: unknown) => Promise<void>
  close: () => Promise<void>
  setProtocolVersion?: (version: string) => void
  /** The request was given up (timeout, cancellation): release whatever still carries it. */
  abandon?: (id: RequestId) => void
  /** `related`: the request on whose stream the message arrived, where the transport knows it. */
  onmessage?: (message: unknown, related?: RequestId) => void
  onclose?: () => void
  onerror?: (error: Error) => void
  /** The answer to this request can no longer arrive (its stream ended without one). */
  onlost?: (id: RequestId, error: Error) => void
}
