import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestContext } from 'node:test'
import type { ResolvedAddress, Resolver } from '../../../../src/credentials/oauth/discovery-guard.ts'

/** A loopback HTTP server that counts the TCP connections it accepts (a TLS attempt counts too). */
export interface Trap { readonly port: number, readonly origin: string, connections: number, requests: number }

type Handler = (request: IncomingMessage, response: ServerResponse) => void

async function listen (t: Pick<TestContext, 'after'>, handler: Handler): Promise<{ port: number, server: ReturnType<typeof createServer> }> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
  t.after(() => new Promise<void>((resolve) => { server.close(() => { resolve() }); server.closeAllConnections() }))
  return { port: (server.address() as AddressInfo).port, server }
}

/** A server discovery must never reach: every connection and request is counted, and answered 200 with `{}`. */
export async function startTrap (t: Pick<TestContext, 'after'>): Promise<Trap> {
  const trap = { port: 0, origin: '', connections: 0, requests: 0 }
  const { port, server } = await listen(t, (_request, response) => {
    trap.requests++
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
  server.on('connection', () => { trap.connections++ })
  trap.port = port
  trap.origin = `http://127.0.0.1:${port}`
  return trap
}

export interface FakeUpstreamOptions {
  /** What the 401's resource_metadata names (absent: no challenge parameter). */
  resourceMetadata?: (self: string) => string | undefined
  /** The authorization servers its RFC 9728 metadata names (default: its own origin). */
  authorizationServers?: (self: string) => string[]
  /** Serve no protected-resource metadata (the 2025-03-26 rule: the origin is the authorization server). */
  noMetadata?: boolean
  /** The URL the upstream is known by (its metadata's `resource` is `<publicOrigin>/mcp`). */
  publicOrigin?: string
  /** Authorization server metadata served at the upstream's origin (the 2025-03-26 rule). */
  asMetadata?: (self: string) => Record<string, unknown>
}

/** An upstream that needs a token: POST → 401 with a Bearer challenge; RFC 9728 metadata at the well-known paths. */
export async function startFakeUpstream (t: Pick<TestContext, 'after'>, options: FakeUpstreamOptions): Promise<{ origin: string, mcpUrl: string }> {
  let self = ''
  const { port } = await listen(t, (request, response) => {
    const path = new URL(request.url ?? '/', self).pathname
    const known = options.publicOrigin ?? self
    if (request.method === 'POST') {
      const metadata = options.resourceMetadata?.(known)
      const challenge = metadata === undefined ? 'Bearer' : `Bearer resource_metadata="${metadata}"`
      response.writeHead(401, { 'www-authenticate': challenge }).end()
      return
    }
    if (path.startsWith('/.well-known/oauth-protected-resource') && options.noMetadata !== true) {
      response.writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ resource: `${known}/mcp`, authorization_servers: options.authorizationServers?.(known) ?? [known] }))
      return
    }
    if (path.startsWith('/.well-known/oauth-authorization-server') && options.asMetadata !== undefined) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(options.asMetadata(known)))
      return
    }
    response.writeHead(404).end()
  })
  self = `http://127.0.0.1:${port}`
  return { origin: self, mcpUrl: `${self}/mcp` }
}

/** An authorization server that serves `metadata(self)` at both well-known paths (RFC 8414 and OpenID). */
export async function startFakeAuthorizationServer (t: Pick<TestContext, 'after'>, metadata: (self: string) => Record<string, unknown>): Promise<{ origin: string, requests: string[] }> {
  let self = ''
  const requests: string[] = []
  const { port } = await listen(t, (request, response) => {
    const path = new URL(request.url ?? '/', self).pathname
    requests.push(path)
    if (path === '/.well-known/oauth-authorization-server' || path === '/.well-known/openid-configuration') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(metadata(self)))
      return
    }
    response.writeHead(404).end()
  })
  self = `http://127.0.0.1:${port}`
  return { origin: self, requests }
}

/** Complete, loopback-only metadata for an authorization server at `self`. */
export function metadataAt (self: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    issuer: self,
    authorization_endpoint: `${self}/authorize`,
    token_endpoint: `${self}/token`,
    registration_endpoint: `${self}/register`,
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
    ...overrides
  }
}

/** A resolver answering from a table (a function of the call count for a name that changes its answer). */
export function fakeResolver (table: Record<string, string[] | ((call: number) => string[])>): Resolver & { calls: Map<string, number> } {
  const calls = new Map<string, number>()
  const resolve = async (hostname: string): Promise<readonly ResolvedAddress[]> => {
    const n = (calls.get(hostname) ?? 0) + 1
    calls.set(hostname, n)
    const entry = table[hostname]
    if (entry === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
    const addresses = typeof entry === 'function' ? entry(n) : entry
    return addresses.map(address => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  return Object.assign(resolve, { calls })
}

/** A fetch that sends `https://<name>` to a loopback server: the upstream "at" a public name, served here. */
export function fetchVia (name: string, local: string): typeof fetch {
  return async (input, init) => await fetch(String(input instanceof Request ? input.url : input).replace(`https://${name}`, local), init)
}
