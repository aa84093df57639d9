import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type TextMapGetter, type TextMapSetter, type Tracer } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace'
import type { TracingConfig } from '../config/tracing-schema.ts'
import type { TraceCarrier, TraceSpan, Tracing } from './tracing.ts'

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

/** Tracing with the OpenTelemetry SDK: spans batched and exported over OTLP/HTTP (JSON). */
export function createOtelTracing (config: TracingConfig, version: string): Tracing {
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
