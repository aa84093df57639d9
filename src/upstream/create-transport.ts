import { SSEClientTransport, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client'
import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import { StdioTransport } from './stdio-transport.ts'
import { WebSocketClientTransport } from './websocket-client-transport.ts'

/**
 * The SDK gives every POST the transport's one long-lived AbortSignal, and each fetch leaves a
 * listener on it (1,471 after 2,000 calls, growing without bound). POSTs go without it: the peer
 * cancels requests itself. GET keeps it, so that close() still ends the standalone stream.
 */
const fetchWithoutSharedSignal: typeof fetch = (input, init) =>
  init?.method === 'POST' ? fetch(input, { ...init, signal: null }) : fetch(input, init)

export interface TransportContext { killAfterMs: number, log: Logger, baseEnv: Readonly<Record<string, string | undefined>> }

/** Builds a fresh transport for one connection attempt; only the configured credentials are sent. */
export function createTransport (upstream: UpstreamConfig, ctx: TransportContext): Transport {
  const headers = upstream.headers
  switch (upstream.transport) {
    case 'stdio':
      return new StdioTransport({
        command: upstream.command ?? '',
        args: upstream.args,
        env: upstream.env,
        cwd: upstream.cwd,
        killAfterMs: ctx.killAfterMs,
        log: ctx.log,
        baseEnv: ctx.baseEnv
      })
    case 'streamable-http':
      return new StreamableHTTPClientTransport(new URL(upstream.url ?? ''), {
        requestInit: { headers },
        fetch: fetchWithoutSharedSignal,
        // The pool owns reconnection; the transport must not retry behind its back.
        reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 }
      })
    case 'sse': {
      const fetchWithHeaders: typeof fetch = (input, init) => {
        const merged = new Headers(init?.headers)
        for (const [k, v] of Object.entries(headers)) merged.set(k, v)
        return fetch(input, { ...init, headers: merged })
      }
      return new SSEClientTransport(new URL(upstream.url ?? ''), { requestInit: { headers }, eventSourceInit: { fetch: fetchWithHeaders } })
    }
    case 'websocket':
      return new WebSocketClientTransport(new URL(upstream.url ?? ''), { headers })
  }
}
