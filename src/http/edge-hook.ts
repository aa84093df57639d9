import type { onRequestHookHandler } from 'fastify'
import type { Metrics } from '../observability/metrics.ts'
import { RPC, rpcError } from '../protocol/json-rpc.ts'
import { checkEdge, type EdgePolicy } from './edge-guard.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route serves a document public to every origin: only its Host is checked. */
    anyOrigin?: boolean
  }
}

/**
 * The DNS-rebinding guard for every route of the public listener (probes, /metrics, the RFC 9728
 * metadata, unknown paths, and the MCP routes, which check again with their own rules): a page on a
 * foreign name that resolves here reads nothing, not even which upstreams exist. Answers 403 in the
 * same JSON shape as the MCP routes' refusal.
 */
export function createEdgeHook (policy: EdgePolicy, metrics: Pick<Metrics, 'httpRejections'>): onRequestHookHandler {
  return (request, reply, done) => {
    const why = checkEdge(request.headers, policy, { missingHostOk: true, anyOrigin: request.routeOptions.config?.anyOrigin === true })
    if (why === undefined) {
      done()
      return
    }
    metrics.httpRejections.inc({ reason: 'origin' })
    void reply.code(403).header('content-type', 'application/json').send(rpcError(null, RPC.TRANSPORT_ERROR, `Forbidden: ${why}`))
  }
}
