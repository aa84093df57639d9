import type { IncomingHttpHeaders } from 'node:http'
import type { onRequestHookHandler } from 'fastify'
import { checkEdge, createEdgePolicy, type EdgePolicy } from './edge-guard.ts'

// The admin listener's edge, before every route (unknown paths included): the browser security
// headers on every answer, and the DNS-rebinding guard (a page on a foreign name that resolves to
// this listener reads nothing and changes nothing, signed in or not).

export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store'
})

/** What of `admin` the edge reads (read per request: a reload may change it). */
export interface AdminEdgeConfig {
  listen: { host: string }
  allowedHosts: readonly string[]
  allowedOrigins: readonly string[]
}

/**
 * Why a request is refused, or undefined. Host: the listen address, a loopback name or
 * `admin.allowedHosts`. Origin, when sent: the listener's own (the Host it was reached by, which
 * passed already), a loopback one, or `admin.allowedOrigins`.
 */
export function checkAdminEdge (headers: IncomingHttpHeaders, policy: EdgePolicy): string | undefined {
  const hostRefusal = checkEdge(headers, policy, { missingHostOk: true, anyOrigin: true })
  if (hostRefusal !== undefined) return hostRefusal
  const origin = headers.origin?.toLowerCase()
  const host = headers.host?.toLowerCase()
  if (origin === undefined || (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`))) return undefined
  return checkEdge(headers, policy, { missingHostOk: true })
}

/** The onRequest hook of the whole admin listener: headers first, so a refusal carries them too. */
export function createAdminEdgeHook (config: () => AdminEdgeConfig | undefined): onRequestHookHandler {
  let seen: AdminEdgeConfig | undefined
  let policy: EdgePolicy = createEdgePolicy('127.0.0.1', [], [])
  return (request, reply, done) => {
    void reply.headers(SECURITY_HEADERS)
    const current = config()
    if (current !== undefined && current !== seen) {
      seen = current
      policy = createEdgePolicy(current.listen.host, current.allowedHosts, current.allowedOrigins)
    }
    const why = checkAdminEdge(request.headers, policy)
    if (why === undefined) {
      done()
      return
    }
    void reply.code(403).send({ error: 'forbidden', message: `Forbidden: ${why}` })
  }
}
