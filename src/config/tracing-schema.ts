import { z } from 'zod'

// OpenTelemetry tracing: off unless enabled, exported over OTLP/HTTP.

export const DEFAULT_OTLP_TRACES_ENDPOINT = 'http://127.0.0.1:4318/v1/traces'

export const tracingSchema = z.strictObject({
  enabled: z.boolean().default(false).describe('a span per downstream and per upstream request, exported over OTLP; off: no cost'),
  endpoint: z.string().refine((s) => {
    try {
      const u = new URL(s)
      return u.protocol === 'http:' || u.protocol === 'https:'
    } catch { return false }
  }, 'must be an http(s) URL').default(DEFAULT_OTLP_TRACES_ENDPOINT).describe('the collector\'s OTLP/HTTP traces URL (JSON encoding)'),
  headers: z.record(z.string(), z.string()).default({}).describe('sent with every export, e.g. the collector\'s API key from the environment'),
  serviceName: z.string().min(1).default('switchboard').describe('service.name of the exported spans'),
  sampleRatio: z.number().min(0).max(1).default(1).describe('share of new traces recorded; a client\'s sampled flag is followed as it is'),
  timeoutMs: z.number().int().min(100).max(60_000).default(10_000).describe('bound of one export request')
})

export type TracingConfig = z.output<typeof tracingSchema>

export const TRACING_DEFAULTS: TracingConfig = { enabled: false, endpoint: DEFAULT_OTLP_TRACES_ENDPOINT, headers: {}, serviceName: 'switchboard', sampleRatio: 1, timeoutMs: 10_000 }
