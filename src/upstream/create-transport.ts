import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import { type CredentialProvider, type CredentialRequest, headerSource } from '../credentials/credential-provider.ts'
import { revealInto } from '../auth/secret.ts'
import { StaticCredentialProvider } from '../credentials/static-credential-provider.ts'
import { HttpClientTransport } from './http-client-transport.ts'
import { StdioTransport } from './stdio-transport.ts'
import type { ProcessLimits } from '../config/process-schema.ts'
import { spawnLimits } from './process-limits.ts'
import type { UpstreamTransport } from './upstream-transport.ts'
import { WebSocketClientTransport } from './websocket-client-transport.ts'

export interface TransportContext {
  killAfterMs: number
  log: Logger
  baseEnv: Readonly<Record<string, string | undefined>>
  /** Where the upstream's credentials come from: its configured headers and env unless given. */
  credentials?: CredentialProvider
  /** Whom the connection acts for, read on each send; absent or undefined: the gateway itself. */
  who?: () => CredentialRequest | undefined
  /** stdio: the resource limits its process runs under (its own, else upstreamDefaults'). */
  limits?: ProcessLimits | undefined
}

const NOBODY = (): undefined => undefined

const STATIC = new StaticCredentialProvider()

/**
 * Builds a fresh transport for one connection attempt; only the upstream's own credentials are
 * sent, asked of its provider on each request (HTTP), at connect (WebSocket) or at spawn (stdio).
 * The SDK (for legacy SSE upstreams) is loaded only when such an upstream connects.
 */
export async function createTransport (upstream: UpstreamConfig, ctx: TransportContext): Promise<UpstreamTransport> {
  const provider = ctx.credentials ?? STATIC
  const who = ctx.who ?? NOBODY
  switch (upstream.transport) {
    case 'stdio': {
      const child = await provider.childEnvFor(upstream)
      const limits = ctx.limits === undefined ? undefined : spawnLimits(upstream.name, ctx.limits)
      if (limits !== undefined) ctx.log.info({ limits: limits.applied }, 'upstream process limits')
      return new StdioTransport({
        ...(limits === undefined ? {} : { limits }),
        command: upstream.command ?? '',
        args: child.args.length === 0 ? upstream.args : [...upstream.args, ...child.args],
        env: revealInto({ ...upstream.env }, child.env),
        cwd: upstream.cwd,
        killAfterMs: ctx.killAfterMs,
        log: ctx.log,
        baseEnv: ctx.baseEnv
      })
    }
    case 'streamable-http':
      return new HttpClientTransport({ url: new URL(upstream.url ?? ''), headers: {}, credentials: headerSource(provider, upstream, who) })
    case 'sse': {
      const { SSEClientTransport } = await import('@modelcontextprotocol/client')
      // Every request of the SDK's transport (the stream's GET and each POST) asks the provider.
      const fetchWithHeaders: typeof fetch = async (input, init) => {
        const merged = new Headers(init?.headers)
        for (const [k, v] of Object.entries(revealInto({}, await provider.headersFor(upstream, who())))) merged.set(k, v)
        return await fetch(input, { ...init, headers: merged })
      }
      // The SDK types its messages; ours are checked by the peer, so only the parameter type differs.
      return new SSEClientTransport(new URL(upstream.url ?? ''), { fetch: fetchWithHeaders, eventSourceInit: { fetch: fetchWithHeaders } }) as unknown as UpstreamTransport
    }
    case 'websocket':
      // A WebSocket sends headers once, with its upgrade request.
      return new WebSocketClientTransport(new URL(upstream.url ?? ''), { headers: revealInto({}, await provider.headersFor(upstream, who())) }) as unknown as UpstreamTransport
  }
}
