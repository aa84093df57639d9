import { SSEClientTransport, StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client'
import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import { StdioTransport } from './stdio-transport.ts'
import { WebSocketClientTransport } from './websocket-client-transport.ts'

/**
 * The SDK gives every POST the transport's one long-lived AbortSignal, and each fetch leaves a
 * listener on it (1,471 after 2,000 calls, growing without bound). Here each POST gets a private
 * signal instead, and the shared one holds a single listener that aborts whatever is still waiting
 * for headers when the transport closes — so a hung upstream cannot keep sockets open behind us.
 */
function createFetchWithPrivateSignals (): typeof fetch {
  const waiting = new Set<AbortController>()
  let linked: AbortSignal | undefined
  return async (input, init) => {
    const shared = init?.signal
    if (init?.method !== 'POST' || shared === undefined || shared === null) return await fetch(input, init)
    if (linked !== shared) {
      linked = shared
      shared.addEventListener('abort', () => { for (const c of waiting) c.abort(shared.reason) }, { once: true })
    }
    shared.throwIfAborted()
    const controller = new AbortController()
    waiting.add(controller)
    try {
      return await fetch(input, { ...init, signal: controller.signal })
    } finally {
      waiting.delete(controller)
    }
  }
}

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
        fetch: createFetchWithPrivateSignals(),
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
