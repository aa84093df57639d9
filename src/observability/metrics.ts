import { Counter, Gauge, Histogram, Registry } from 'prom-client'

export type CallOutcome = 'ok' | 'tool_error' | 'upstream_error' | 'timeout' | 'unavailable' | 'cancelled' | 'unknown_tool' | 'invalid'

/** The gateway's own registry (never prom-client's global one), so two apps in one process never clash. */
export function createMetrics () {
  const registry = new Registry()
  const calls = new Counter({ name: 'switchboard_tool_calls_total', help: 'tools/call requests by upstream, tool and outcome', labelNames: ['upstream', 'tool', 'outcome'] as const, registers: [registry] })
  const callDuration = new Histogram({
    name: 'switchboard_tool_call_duration_seconds',
    help: 'tools/call duration through the gateway, by upstream, tool and outcome',
    labelNames: ['upstream', 'tool', 'outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry]
  })
  const upstreamUp = new Gauge({ name: 'switchboard_upstream_up', help: '1 when the upstream is connected and initialized', labelNames: ['upstream'] as const, registers: [registry] })
  const upstreamReconnects = new Counter({ name: 'switchboard_upstream_reconnects_total', help: 'reconnection attempts after a lost or failed connection', labelNames: ['upstream'] as const, registers: [registry] })
  const upstreamTools = new Gauge({ name: 'switchboard_upstream_tools', help: 'tools the upstream lists, before filters', labelNames: ['upstream'] as const, registers: [registry] })
  const sessions = new Gauge({ name: 'switchboard_sessions_active', help: 'open downstream sessions', labelNames: ['transport'] as const, registers: [registry] })
  const catalogTools = new Gauge({ name: 'switchboard_catalog_tools', help: 'tools in the merged catalog', registers: [registry] })
  const catalogRenamed = new Gauge({ name: 'switchboard_catalog_renamed_tools', help: 'tools exposed under a shortened or disambiguated name', registers: [registry] })
  const notifications = new Counter({ name: 'switchboard_notifications_relayed_total', help: 'notifications sent to downstream sessions', labelNames: ['method'] as const, registers: [registry] })
  const forwarded = new Counter({ name: 'switchboard_forwarded_requests_total', help: 'requests other than tools/call routed to an upstream (prompts/get, resources/read, completion/complete, ...), by outcome', labelNames: ['upstream', 'method', 'outcome'] as const, registers: [registry] })
  const serverRequests = new Counter({ name: 'switchboard_upstream_requests_total', help: 'requests upstreams sent to clients (sampling, elicitation, roots), by outcome', labelNames: ['upstream', 'method', 'outcome'] as const, registers: [registry] })
  const catalogItems = new Gauge({ name: 'switchboard_catalog_items', help: 'entries in the merged catalogs, by kind (tools, prompts, resources, resource_templates)', labelNames: ['kind'] as const, registers: [registry] })
  const resourceCollisions = new Gauge({ name: 'switchboard_catalog_resource_collisions', help: 'resource URIs or templates offered by more than one upstream (the first in config order serves them)', registers: [registry] })
  const httpRejections = new Counter({ name: 'switchboard_http_rejections_total', help: 'HTTP requests refused at the edge, by reason', labelNames: ['reason'] as const, registers: [registry] })

  // Children cached per label set: prom-client would otherwise hash the labels on every call.
  const callChildren = new Map<string, { count: ReturnType<typeof calls.labels>, time: ReturnType<typeof callDuration.labels> }>()
  function observeCall (upstream: string, tool: string, outcome: CallOutcome, seconds: number): void {
    const key = `${upstream}\0${tool}\0${outcome}`
    let child = callChildren.get(key)
    if (child === undefined) {
      const labels = { upstream, tool, outcome }
      child = { count: calls.labels(labels), time: callDuration.labels(labels) }
      callChildren.set(key, child)
    }
    child.count.inc()
    child.time.observe(seconds)
  }

  return { registry, observeCall, upstreamUp, upstreamReconnects, upstreamTools, sessions, catalogTools, catalogRenamed, catalogItems, resourceCollisions, notifications, forwarded, serverRequests, httpRejections }
}

export type Metrics = ReturnType<typeof createMetrics>
