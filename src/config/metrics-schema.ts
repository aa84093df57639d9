import { z } from 'zod'

// The `metrics` block: who may scrape /metrics on the MCP listener. Without a token it is public,
// as on loopback it only reaches this machine; beyond loopback, set one (or scrape the admin listener).

export const MIN_METRICS_TOKEN_LENGTH = 16

export const metricsSchema = z.strictObject({
  // eslint-disable-next-line no-template-curly-in-string -- the config's own ${VAR} syntax, shown to the user
  token: z.string().min(MIN_METRICS_TOKEN_LENGTH, 'must be at least 16 characters (e.g. openssl rand -base64 32); take it from the environment: token: "${SWITCHBOARD_METRICS_TOKEN}"')
    .optional()
    .describe('when set, /metrics on the MCP listener answers only Authorization: Bearer <token> (401 otherwise); read on each scrape, so a reload changes it')
}).describe('/metrics on the MCP listener; the admin listener serves it too, behind the admin token')

export type MetricsConfig = z.output<typeof metricsSchema>
