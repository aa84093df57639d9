import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import { HttpClientTransport } from './http-client-transport.ts'
import { StdioTransport } from './stdio-transport.ts'
import type { UpstreamTransport } from './upstream-transport.ts'
import { WebSocketClientTransport } from './websocket-client-transport.ts'

export interface TransportContext { killAfterMs: number, log: Logger, baseEnv: Readonly<Record<string, string | undefined>> }

/**
 * Builds a fresh transport for one connection attempt; only the configured credentials are sent.
 * The SDK (for legacy SSE upstreams) is loaded only when such an upstream connects.
 */
export async function createTransport (upstream: UpstreamConfig, ctx: TransportContext): Promise<UpstreamTransport> {
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
      return new HttpClientTransport({ url: new URL(upstream.url ?? ''), headers })
    case 'sse': {
      const { SSEClientTransport } = await import('@modelcontextprotocol/client')
      const fetchWithHeaders: typeof fetch = (input, init) => {
        const merged = new Headers(init?.headers)
        for (const [k, v] of Object.entries(headers)) merged.set(k, v)
        return fetch(input, { ...init, headers: merged })
      }
      // The SDK types its messages; ours are checked by the peer, so only the parameter type differs.
      return new SSEClientTransport(new URL(upstream.url ?? ''), { requestInit: { headers }, eventSourceInit: { fetch: fetchWithHeaders } }) as unknown as UpstreamTransport
    }
    case 'websocket':
      return new WebSocketClientTransport(new URL(upstream.url ?? ''), { headers }) as unknown as UpstreamTransport
  }
}
