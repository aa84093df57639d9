import type { FastifyInstance } from 'fastify'
import type { Registry } from 'prom-client'
import { hasBearerToken } from '../auth/bearer-token.ts'

export interface OpsRoutesOptions {
  registry: Registry
  isReady: () => boolean
  isDraining: () => boolean
  status: () => unknown
  /** metrics.token in force (read per scrape, so a reload changes it); undefined: /metrics is public. */
  metricsToken: () => string | undefined
}

const METRICS_CHALLENGE = 'Bearer realm="switchboard-metrics"'

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

  app.get('/metrics', async (request, reply) => {
    const token = options.metricsToken()
    if (token !== undefined && !hasBearerToken(request.headers.authorization, token)) {
      const message = request.headers.authorization === undefined
        ? '/metrics needs Authorization: Bearer <metrics token>'
        : 'the metrics token is not valid'
      return reply.code(401).header('www-authenticate', METRICS_CHALLENGE).send({ error: 'unauthorized', message })
    }
    const body = await options.registry.metrics()
    return reply.header('content-type', options.registry.contentType).send(body)
  })
}
