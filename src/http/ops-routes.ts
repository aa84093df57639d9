import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Registry } from 'prom-client'
import { hasBearerToken } from '../auth/bearer-token.ts'

export interface OpsRoutesOptions {
  registry: Registry
  isReady: () => boolean
  isDraining: () => boolean
  status: () => unknown
  /** metrics.token in force (read per scrape, so a reload changes it); undefined: /metrics is public. */
  metricsToken: () => string | undefined
  /** The tokens (metrics, admin) whose bearer sees the upstreams' names, states and last errors in /healthz and /readyz. */
  detailTokens: () => ReadonlyArray<string | undefined>
}

const METRICS_CHALLENGE = 'Bearer realm="switchboard-metrics"'

/** Liveness, readiness and Prometheus metrics: what an orchestrator and a scraper need. */
export async function opsRoutes (app: FastifyInstance, options: OpsRoutesOptions): Promise<void> {
  // A probe needs the status code and nothing more; upstream names, states and last errors (which
  // can name internal hosts) go only to an operator's token.
  const details = (request: FastifyRequest): { upstreams: unknown } | undefined => {
    const header = request.headers.authorization
    if (header === undefined) return undefined
    const shown = options.detailTokens().some(token => token !== undefined && hasBearerToken(header, token))
    return shown ? { upstreams: options.status() } : undefined
  }

  // Liveness: 200 for as long as the listener answers, through the drain delay and close too. A 503
  // here would have an orchestrator kill a process that is only finishing its calls.
  app.get('/healthz', async (request) => ({ status: 'ok', ...details(request) }))

  app.get('/readyz', async (request, reply) => {
    if (options.isDraining()) return reply.code(503).send({ status: 'draining', ...details(request) })
    if (!options.isReady()) return reply.code(503).send({ status: 'starting', ...details(request) })
    return { status: 'ready', ...details(request) }
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
