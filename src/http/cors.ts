import type { ServerResponse } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'

// CORS for browser-based MCP clients on the MCP routes. Which origins may read the answers is
// decided by the edge guard alone (loopback origins and http.allowedOrigins): CORS is only told,
// afterwards, that an origin the guard let through may also read what it gets back. A foreign
// origin's preflight is refused by the guard (403) before any of this runs, without CORS headers.

/**
 * What a browser client sends besides the CORS-safelisted headers. Authorization is listed by name:
 * a wildcard would never cover it. It is a request header set by the page, not a "credential" in
 * the CORS sense (cookies, HTTP auth, TLS client certificates), so no Allow-Credentials is sent.
 */
// Mcp-Method and Mcp-Name: every 2026-07-28 request carries them.
export const CORS_ALLOW_HEADERS = 'Content-Type, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, Accept'

/** Response headers a page may read: the session id above all, the 401 challenge for OAuth discovery, Retry-After of a 503. */
export const CORS_EXPOSE_HEADERS = 'Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After'

/**
 * How long a browser may reuse a preflight's answer (Chromium caps it at 2 hours). Caching a yes is
 * harmless: the actual request passes the edge guard again, so an origin removed from the config is
 * still refused.
 */
export const CORS_MAX_AGE_S = 7200

/**
 * On every response of the MCP routes. Set on the raw response, so it reaches the responses that
 * are written there directly (SSE streams) as well as Fastify's; `origin` must have passed the edge
 * guard already.
 */
export function setCorsHeaders (raw: ServerResponse, origin: string | undefined): void {
  // Always, as the answer depends on Origin: no cache may serve one origin's answer to another.
  raw.setHeader('vary', 'Origin')
  if (origin === undefined) return
  raw.setHeader('access-control-allow-origin', origin)
  raw.setHeader('access-control-expose-headers', CORS_EXPOSE_HEADERS)
}

/**
 * OPTIONS on an MCP route: 204 with the methods the route serves; a CORS preflight (an Origin and
 * Access-Control-Request-Method) also learns the headers it may send and how long to remember it.
 */
export function createPreflightHandler (methods: readonly string[]): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> {
  const allow = [...methods, 'OPTIONS'].join(', ')
  return async (request, reply) => {
    void reply.header('allow', allow)
    if (request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined) {
      void reply.header('access-control-allow-methods', allow)
        .header('access-control-allow-headers', CORS_ALLOW_HEADERS)
        .header('access-control-max-age', String(CORS_MAX_AGE_S))
    }
    return await reply.code(204).send()
  }
}
