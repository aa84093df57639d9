import { performance } from 'node:perf_hooks'
import { Gauge, collectDefaultMetrics, type Registry } from 'prom-client'

/**
 * The process and Node.js runtime metrics, under their standard names (process_cpu_seconds_total,
 * process_resident_memory_bytes, nodejs_eventloop_lag_seconds, nodejs_heap_size_used_bytes, …) so
 * stock dashboards and alerts work as they are, plus the event loop's utilization, which the lag
 * alone does not show: a loop busy 95% of the time can still have a low lag.
 */
export function registerRuntimeMetrics (registry: Registry): void {
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 })
  let last = performance.eventLoopUtilization()
  new Gauge({ // eslint-disable-line no-new -- registered, read at each scrape
    name: 'switchboard_event_loop_utilization',
    help: 'share of the time since the previous scrape the event loop was busy (0 to 1)',
    registers: [registry],
    collect () {
      const now = performance.eventLoopUtilization()
      this.set(performance.eventLoopUtilization(now, last).utilization)
      last = now
    }
  })
}
