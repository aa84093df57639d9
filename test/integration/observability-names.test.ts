import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { startControllableHttpServer } from '../fixtures/controllable-server.ts'
import { dashboardExprs, promqlRefs, ruleExprs, type SourcedExpr } from '../helpers/promql-names.ts'
import { promtool, promtoolOrSkip } from '../helpers/promtool.ts'
import { redisOrSkip, startRedisServer } from '../helpers/redis-server.ts'
import { connectClient, metricValue, scrapeMetrics, startGateway, waitReady } from '../helpers/start-gateway.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const DASHBOARDS = join(ROOT, 'deploy/grafana/dashboards')
const PROMETHEUS = join(ROOT, 'deploy/prometheus')
// Series Prometheus makes itself, not the gateway, and the labels they carry besides the target's.
const PROMETHEUS_SERIES: Record<string, string[]> = { up: [], ALERTS: ['alertname', 'alertstate', 'severity'], ALERTS_FOR_STATE: ['alertname', 'severity'] }
// Labels the scrape adds to every series.
const TARGET_LABELS = ['instance', 'job']

function dashboardFiles (): string[] {
  return readdirSync(DASHBOARDS).filter(f => f.endsWith('.json')).map(f => join(DASHBOARDS, f))
}

function allExprs (): SourcedExpr[] {
  return [...dashboardFiles().flatMap(dashboardExprs), ...ruleExprs(join(PROMETHEUS, 'alerts.yml'))]
}

test('the PromQL reader keeps metric names and takes labels from selectors and label lists, not from functions, keywords, strings or durations', () => {
  const refs = promqlRefs(`histogram_quantile(0.99, sum by (instance, le) (rate(foo_bucket{job=~"$job", outcome!~"ok|by"}[$__rate_interval] offset 5m)))
    / ignoring (outcome) group_left SUM WITHOUT (tool) (bar_total) > bool 1e3
    and absent(up{job="switchboard"} == 1) or vector(0) unless on () time() - baz # not_a_metric`)
  assert.deepEqual([...refs.metrics].sort(), ['bar_total', 'baz', 'foo_bucket', 'up'])
  assert.deepEqual([...refs.labels].sort(), ['instance', 'job', 'le', 'outcome', 'tool'])
  assert.throws(() => promqlRefs('rat(foo_total[5m])'), /unknown PromQL function rat\(\)/)
})

test('every metric the dashboards and the alert rules query is exported by a running gateway, with every label they filter or group by', async (t) => {
  if (!redisOrSkip(t)) return
  const redis = await startRedisServer(t)
  const web = await startControllableHttpServer({ name: 'web' })
  t.after(() => web.close())
  // Every feature the dashboard shows: sessions and rate limits in Redis, a concurrency cap, a breaker, a policy.
  const gw = await startGateway(t, JSON.stringify({
    upstreams: [{ name: 'web', transport: 'streamable-http', url: web.url, concurrency: { limit: 2 }, circuitBreaker: { failureThreshold: 5 } }],
    redis: { url: redis.url, keyPrefix: `obs${Date.now()}` },
    sessions: { store: 'redis' },
    rateLimits: { store: 'redis', rules: [{ tools: ['*'], key: 'principal', limit: 1000, windowMs: 60_000 }] },
    policies: { default: 'allow', rules: [{ tools: ['web__crash'], effect: 'deny' }] },
    // A hook nobody answers (a closed loopback port), let through: the hook's series exist.
    guardrails: { webhook: { url: 'http://127.0.0.1:9/check', timeoutMs: 500, failMode: 'open', on: ['request'] } }
  }))
  await waitReady(gw)
  const client = await connectClient(t, gw.url)
  await client.callTool({ name: 'web__whoami', arguments: {} })

  const exposition = await scrapeMetrics(gw.baseUrl)
  // The features are running, not only registered.
  assert.equal(metricValue(exposition, 'switchboard_tool_calls_total', { upstream: 'web', outcome: 'ok' }), 1)
  assert.equal(metricValue(exposition, 'switchboard_circuit_breaker_state', { upstream: 'web', state: 'closed' }), 1)
  assert.equal(metricValue(exposition, 'switchboard_upstream_calls_in_flight', { upstream: 'web' }), 0)
  assert.equal(metricValue(exposition, 'switchboard_rate_limit_store_fallback'), 0)
  // Endpoints (issue 15) add a label, never a name: /mcp is the empty endpoint.
  assert.equal(metricValue(exposition, 'switchboard_sessions_active', { transport: 'streamable-http', endpoint: '' }), 1)
  assert.equal(metricValue(exposition, 'switchboard_tool_calls_total', { upstream: 'web', endpoint: '', outcome: 'ok' }), 1)
  assert.ok((metricValue(exposition, 'switchboard_session_store_duration_seconds_count', { op: 'save' }) ?? 0) >= 1, 'sessions saved in Redis')

  const types = new Map<string, string>()
  for (const m of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(m[1] as string, m[2] as string)
  // A histogram has no series under its own name: it is queried through _bucket, _sum or _count.
  const series = (name: string): { metric: string, bucket: boolean } | undefined => {
    const type = types.get(name)
    if (type !== undefined) return type === 'histogram' ? undefined : { metric: name, bucket: false }
    const [, base, suffix] = /^(.+)_(bucket|sum|count)$/.exec(name) ?? []
    const baseType = base === undefined ? undefined : types.get(base)
    if (base === undefined || baseType === undefined) return undefined
    if (baseType === 'histogram' || (baseType === 'summary' && suffix !== 'bucket')) return { metric: base, bucket: suffix === 'bucket' }
    return undefined
  }
  const registry = gw.gateway.metrics.registry
  const labelNames = (metric: string): readonly string[] => {
    // prom-client keeps a metric's declared label names on it; its types do not say so.
    const names = (registry.getSingleMetric(metric) as unknown as { labelNames?: readonly string[] } | undefined)?.labelNames
    assert.ok(Array.isArray(names), `label names of ${metric} not readable from prom-client`)
    return names
  }

  const problems: string[] = []
  const used = new Set<string>()
  const exprs = allExprs()
  for (const { where, expr, labels: extra = [] } of exprs) {
    let refs: ReturnType<typeof promqlRefs>
    try {
      refs = promqlRefs(expr)
    } catch (err: unknown) {
      problems.push(`${where}: ${(err as Error).message}`)
      continue
    }
    const allowed = new Set(TARGET_LABELS)
    let missing = false
    for (const name of refs.metrics) {
      used.add(name)
      const prometheus = PROMETHEUS_SERIES[name]
      const found = prometheus === undefined ? series(name) : undefined
      if (prometheus !== undefined) for (const l of prometheus) allowed.add(l)
      else if (found === undefined) {
        problems.push(`${where}: ${name} is not exported by the gateway`)
        missing = true
      } else {
        for (const l of labelNames(found.metric)) allowed.add(l)
        if (found.bucket) allowed.add('le')
      }
    }
    if (missing) continue // its labels are unknown
    for (const label of [...refs.labels, ...extra]) {
      if (!allowed.has(label)) problems.push(`${where}: label "${label}" is on none of ${[...refs.metrics].join(', ') || 'its metrics'}`)
    }
  }
  assert.deepEqual(problems, [])

  // What the dashboard and the rules are for (issue 13): none of it may quietly go missing.
  for (const name of [
    'switchboard_tool_calls_total', 'switchboard_tool_call_duration_seconds_bucket', 'switchboard_upstream_up',
    'switchboard_upstream_reconnects_total', 'switchboard_sessions_active', 'switchboard_rate_limit_rejections_total',
    'switchboard_policy_denials_total', 'switchboard_rate_limit_store_fallback', 'switchboard_session_store_errors_total',
    'switchboard_config_last_reload_successful', 'switchboard_config_reloads_total', 'process_cpu_seconds_total',
    'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds', 'switchboard_event_loop_utilization', 'up'
  ]) assert.ok(used.has(name), `${name} is queried by no dashboard or rule`)
})

test('promtool accepts the Prometheus config, the alert rules and every dashboard query, and the rules pass their unit tests', (t) => {
  if (!promtoolOrSkip(t)) return
  for (const args of [
    ['check', 'config', join(PROMETHEUS, 'prometheus.yml')],
    ['check', 'rules', join(PROMETHEUS, 'alerts.yml')],
    ['test', 'rules', join(PROMETHEUS, 'alerts.test.yml')]
  ]) {
    const run = promtool(args)
    assert.equal(run.status, 0, `promtool ${args.join(' ')}:\n${run.output}`)
  }

  // Each dashboard query as a recording rule, Grafana's variables replaced by what they may stand for,
  // so promtool parses it as Prometheus would.
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-dashboards-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const substitute = (expr: string): string => expr
    .replace(/\$(?:__rate_interval|__interval|__range)\b|\$\{(?:__rate_interval|__interval|__range)\}/g, '1m')
    .replace(/\$\{[^}]*\}|\$\w+/g, '.*')
  const rules = dashboardFiles().flatMap(dashboardExprs)
    .filter(({ expr }) => expr.trim() !== '')
    .map(({ expr }, i) => ({ record: `dashboard:query_${i}`, expr: substitute(expr) }))
  assert.ok(rules.length > 0)
  const file = join(dir, 'dashboard-queries.yml')
  writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules }] }))
  const run = promtool(['check', 'rules', file])
  assert.equal(run.status, 0, `promtool check rules (dashboard queries):\n${run.output}`)
})
