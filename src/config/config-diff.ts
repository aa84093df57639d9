import { isDeepStrictEqual } from 'node:util'
import type { GatewayConfig } from './schema.ts'

/** What a reload changes, by upstream name and by config section. */
export interface ConfigDiff {
  upstreams: {
    added: string[]
    removed: string[]
    /** Their config changed: they reconnect (the old connection drains). */
    changed: string[]
    /** Kept as they are: connection and calls in flight untouched. */
    unchanged: string[]
  }
  /** Top-level sections besides upstreams whose change applies to the next request. */
  applied: string[]
  /** Paths that changed but take effect only after a restart; the running values stay. */
  restartRequired: string[]
}

/** Sections applied live, on the next request (or the next connection, for shutdown timings). */
const LIVE_SECTIONS = ['catalog', 'endpoints', 'auth', 'policies', 'guardrails', 'scanning', 'rateLimits', 'limits', 'audit', 'logLevel', 'shutdown', 'metrics'] as const

/** What `ConfigDiff.applied` may name. */
export type LiveSection = typeof LIVE_SECTIONS[number] | 'admin.token' | 'admin.showQueryParams'

/**
 * Sections read once at start: the listener, the HTTP edge, the stores, the tracer. So is
 * `admin.listen`; `admin.token` is not: it is read on each admin request.
 */
const RESTART_SECTIONS = ['listen', 'http', 'redis', 'sessions', 'pinning', 'tracing', 'logging'] as const

export function diffConfig (previous: GatewayConfig, next: GatewayConfig): ConfigDiff {
  const before = new Map(previous.upstreams.map(u => [u.name, u]))
  const after = new Map(next.upstreams.map(u => [u.name, u]))
  const upstreams: ConfigDiff['upstreams'] = { added: [], removed: [], changed: [], unchanged: [] }
  // New process defaults (start, idleStopMs, limits) restart the stdio upstreams; maxRunning is read live.
  const defaultsChanged = !isDeepStrictEqual({ ...previous.upstreamDefaults, maxRunning: undefined }, { ...next.upstreamDefaults, maxRunning: undefined })
  for (const [name, upstream] of after) {
    const old = before.get(name)
    if (old === undefined) upstreams.added.push(name)
    else if (isDeepStrictEqual(old, upstream) && !(defaultsChanged && upstream.transport === 'stdio')) upstreams.unchanged.push(name)
    else upstreams.changed.push(name)
  }
  for (const name of before.keys()) if (!after.has(name)) upstreams.removed.push(name)
  const applied: LiveSection[] = LIVE_SECTIONS.filter(key => !isDeepStrictEqual(previous[key], next[key]))
  if (!isDeepStrictEqual(previous.admin?.token, next.admin?.token)) applied.push('admin.token')
  if (!isDeepStrictEqual(previous.admin?.showQueryParams, next.admin?.showQueryParams)) applied.push('admin.showQueryParams')
  const restartRequired: string[] = RESTART_SECTIONS.filter(key => !isDeepStrictEqual(previous[key], next[key]))
  if (!isDeepStrictEqual(previous.admin?.listen, next.admin?.listen)) restartRequired.push('admin.listen')
  return { upstreams, applied, restartRequired }
}

/**
 * The config in force after a reload: the new one, except what only a restart applies (the
 * listeners, the HTTP edge, the stores), which keeps its running values.
 */
export function effectiveConfig (previous: GatewayConfig, next: GatewayConfig): GatewayConfig {
  const admin = previous.admin === undefined || next.admin === undefined ? previous.admin : { ...next.admin, listen: previous.admin.listen }
  const effective: Record<string, unknown> = { ...next, admin }
  for (const key of RESTART_SECTIONS) effective[key] = previous[key]
  // An absent optional section stays absent, not a key holding undefined.
  for (const key of ['admin', 'redis']) if (effective[key] === undefined) delete effective[key]
  return Object.freeze(effective) as GatewayConfig
}
