import { z } from 'zod'

// Per-upstream resilience: a circuit breaker that stops sending to an upstream that keeps failing,
// and bounded retries of calls that are safe to repeat.

export const DEFAULT_CIRCUIT_BREAKER = Object.freeze({ enabled: true, failureThreshold: 5, windowMs: 30_000, cooldownMs: 15_000 })
export const DEFAULT_RETRIES = Object.freeze({ maxAttempts: 2, backoffMs: 200 })

export const circuitBreakerSchema = z.strictObject({
  enabled: z.boolean().default(DEFAULT_CIRCUIT_BREAKER.enabled).describe('false: no breaker for this upstream'),
  failureThreshold: z.number().int().min(1).max(1000).default(DEFAULT_CIRCUIT_BREAKER.failureThreshold)
    .describe('consecutive failures (timeouts, not connected, connection lost, HTTP 5xx) that open the circuit'),
  windowMs: z.number().int().min(1).default(DEFAULT_CIRCUIT_BREAKER.windowMs).describe('the failures must all fall within this window'),
  cooldownMs: z.number().int().min(1).max(3_600_000).default(DEFAULT_CIRCUIT_BREAKER.cooldownMs)
    .describe('how long an open circuit fails calls fast before one probe call is let through')
})

export const retriesSchema = z.strictObject({
  maxAttempts: z.number().int().min(1).max(10).default(DEFAULT_RETRIES.maxAttempts)
    .describe('attempts per call of a tool annotated readOnlyHint or idempotentHint, after a connection failure (1: no retries)'),
  backoffMs: z.number().int().min(0).max(60_000).default(DEFAULT_RETRIES.backoffMs).describe('wait before the first retry, doubled for each next one, with jitter')
})

export type CircuitBreakerConfig = z.output<typeof circuitBreakerSchema>
export type RetriesConfig = z.output<typeof retriesSchema>
