import type { Attributes } from '@opentelemetry/api'
import type { TracingConfig } from '../config/tracing-schema.ts'

/** W3C trace context as it travels: an HTTP header pair, or the same keys in a request's `_meta`. */
export interface TraceCarrier { traceparent?: string, tracestate?: string }

/** What a span ended with: the gateway's outcome words (ok, tool_error, timeout, …) and, on failure, why. */
export interface SpanEnd { outcome: string, error?: string }

/** One span in progress. */
export interface TraceSpan {
  /** This span's context, to send on with a request it causes. */
  readonly carrier: TraceCarrier
  set: (key: string, value: string | number | boolean) => void
  /** A span of a request this one sends upstream (kind CLIENT). */
  child: (name: string, attributes: Attributes) => TraceSpan
  end: (how: SpanEnd) => void
}

/**
 * The gateway's tracing. Off, it is `enabled: false` and callers skip every tracing step, so it
 * costs nothing; on, it records a SERVER span per downstream request and a CLIENT span per upstream
 * request, following the OpenTelemetry conventions for MCP (span name `{method} {target}`,
 * `mcp.method.name`, `gen_ai.tool.name`, …) and exports them over OTLP/HTTP.
 */
export interface Tracing {
  readonly enabled: boolean
  /** A downstream request's span, a child of the client's trace when `carrier` names one. */
  request: (name: string, attributes: Attributes, carrier: TraceCarrier | undefined) => TraceSpan
  /** Exports what is still buffered; the end of the process. */
  close: () => Promise<void>
}

export const TRACING_OFF: Tracing = {
  enabled: false,
  request: () => { throw new Error('tracing is off: check `enabled` first') },
  close: async () => {}
}

/** The OpenTelemetry SDK is loaded only when tracing is on (it costs some 20 MB of resident memory). */
export async function loadTracing (config: TracingConfig, version: string): Promise<Tracing> {
  if (!config.enabled) return TRACING_OFF
  const { createOtelTracing } = await import('./otel-tracing.ts')
  return createOtelTracing(config, version)
}

// W3C Trace Context: version, trace id, parent id, flags, lowercase hex; version ff and all-zero ids are invalid.
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/
// Printable ASCII without edge spaces, at most the 512 characters the spec asks to propagate.
const TRACESTATE = /^[\x21-\x7e]([\x20-\x7e]{0,510}[\x21-\x7e])?$/

/**
 * The W3C trace context a request's `_meta`, or an HTTP request's headers, carry, if valid. Only a
 * valid one is kept (the spec says to ignore the rest): the carrier becomes HTTP headers towards an
 * upstream, and a value no header may hold (a newline, non-ASCII) made that send fail as if the
 * upstream were gone.
 */
export function carrierOf (meta: unknown): TraceCarrier | undefined {
  if (typeof meta !== 'object' || meta === null) return undefined
  const { traceparent, tracestate } = meta as Record<string, unknown>
  if (typeof traceparent !== 'string' || !TRACEPARENT.test(traceparent)) return undefined
  return typeof tracestate === 'string' && TRACESTATE.test(tracestate) ? { traceparent, tracestate } : { traceparent }
}
