import type { FastifyRequest } from 'fastify'

/** The endpoint segment of /mcp/<endpoint> and /sse/<endpoint>; undefined on the bare paths. */
export function endpointOf (request: FastifyRequest): string | undefined {
  return (request.params as { endpoint?: string } | undefined)?.endpoint
}
