import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'

export interface OpsRoutesOptions {
  registry: Registry
  isReady: () => boolean
  isDraining: () => boolean
  status: () => unknown
}

/** Liveness, readiness and Prometheus metrics: what an orchestrator and a scraper need. */
export async function opsRoutes (app: FastifyInstance, options: OpsRoutesOptions): Promise<void> {
  // Liveness: 200 for as long as the listener answers, through the drain delay and close too. A 503
  // here would have an orchestrator kill a process that is only finishing its calls.
  app.get('/healthz', async () => ({ status: 'ok' }))

  app.get('/readyz', async (_request, reply) => {
    if (options.isDraining()) return reply.code(503).send({ status: 'draining' })
    if (!options.isReady()) return reply.code(503).send({ status: 'starting', upstreams: options.status() })
    return { status: 'ready', upstreams: options.status() }
  })

  app.get('/metrics', async (_request, reply) => {
    const body = await options.registry.metrics()
    return reply.header('content-type', options.registry.contentType).send(body)
  })
}
