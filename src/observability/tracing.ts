import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type TextMapGetter, type TextMapSetter, type Tracer } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace'
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

const getter: TextMapGetter<TraceCarrier> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => key === 'traceparent' ? carrier.traceparent : key === 'tracestate' ? carrier.tracestate : undefined
}
const setter: TextMapSetter<TraceCarrier> = {
  set: (carrier, key, value) => {
    if (key === 'traceparent') carrier.traceparent = value
    else if (key === 'tracestate') carrier.tracestate = value
  }
}

export const TRACING_OFF: Tracing = {
  enabled: false,
  request: () => { throw new Error('tracing is off: check `enabled` first') },
  close: async () => {}
}

export function createTracing (config: TracingConfig, version: string): Tracing {
  if (!config.enabled) return TRACING_OFF
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': version }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.endpoint, headers: { ...config.headers }, timeoutMillis: config.timeoutMs }) })]
  })
  const tracer = provider.getTracer('switchboard', version)
  const propagator = new W3CTraceContextPropagator()

  function wrap (span: Span, context: Context): TraceSpan {
    const carrier: TraceCarrier = {}
    propagator.inject(context, carrier, setter)
    return {
      carrier,
      set: (key, value) => { span.setAttribute(key, value) },
      child: (name, attributes) => start(tracer, name, SpanKind.CLIENT, attributes, context),
      end: ({ outcome, error }) => {
        span.setAttribute('switchboard.outcome', outcome)
        if (error !== undefined) {
          span.setAttribute('error.type', error)
          span.setStatus({ code: SpanStatusCode.ERROR, message: error })
        }
        span.end()
      }
    }
  }

  function start (t: Tracer, name: string, kind: SpanKind, attributes: Attributes, parent: Context): TraceSpan {
    const span = t.startSpan(name, { kind, attributes }, parent)
    return wrap(span, trace.setSpan(parent, span))
  }

  return {
    enabled: true,
    request: (name, attributes, carrier) => {
      const parent = carrier?.traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, carrier, getter)
      return start(tracer, name, SpanKind.SERVER, attributes, parent)
    },
    close: async () => { await provider.shutdown().catch(() => {}) }
  }
}

/** The trace context a request carries in `_meta`, if any. */
export function carrierOf (meta: unknown): TraceCarrier | undefined {
  if (typeof meta !== 'object' || meta === null) return undefined
  const { traceparent, tracestate } = meta as Record<string, unknown>
  if (typeof traceparent !== 'string') return undefined
  return typeof tracestate === 'string' ? { traceparent, tracestate } : { traceparent }
}
