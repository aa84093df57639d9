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
const LIVE_SECTIONS = ['catalog', 'auth', 'policies', 'rateLimits', 'audit', 'logLevel', 'shutdown', 'metrics'] as const

/**
 * Sections (or paths inside them) read once at start: the listeners, the HTTP edge, the stores.
 * `admin.token` is not among them: it is read on each admin request.
 */
const RESTART_PATHS: ReadonlyArray<readonly [string, (c: GatewayConfig) => unknown]> = [
  ['listen', c => c.listen],
  ['http', c => c.http],
  ['redis', c => c.redis],
  ['sessions', c => c.sessions],
  ['pinning', c => c.pinning],
  ['tracing', c => c.tracing],
  ['admin.listen', c => c.admin?.listen]
]

export function diffConfig (previous: GatewayConfig, next: GatewayConfig): ConfigDiff {
  const before = new Map(previous.upstreams.map(u => [u.name, u]))
  const after = new Map(next.upstreams.map(u => [u.name, u]))
  const upstreams: ConfigDiff['upstreams'] = { added: [], removed: [], changed: [], unchanged: [] }
  for (const [name, upstream] of after) {
    const old = before.get(name)
    if (old === undefined) upstreams.added.push(name)
    else if (isDeepStrictEqual(old, upstream)) upstreams.unchanged.push(name)
    else upstreams.changed.push(name)
  }
  for (const name of before.keys()) if (!after.has(name)) upstreams.removed.push(name)
  const applied: string[] = LIVE_SECTIONS.filter(key => !isDeepStrictEqual(previous[key], next[key]))
  if (!isDeepStrictEqual(previous.admin?.token, next.admin?.token)) applied.push('admin.token')
  const restartRequired = RESTART_PATHS.filter(([, get]) => !isDeepStrictEqual(get(previous), get(next))).map(([path]) => path)
  return { upstreams, applied, restartRequired }
}

/**
 * The config in force after a reload: the new one, except what only a restart applies (the
 * listeners, the HTTP edge, the stores), which keeps its running values.
 */
export function effectiveConfig (previous: GatewayConfig, next: GatewayConfig): GatewayConfig {
  const admin = previous.admin === undefined || next.admin === undefined ? previous.admin : { ...next.admin, listen: previous.admin.listen }
  const { admin: _dropped, ...rest } = next
  return Object.freeze({
    ...rest,
    listen: previous.listen,
    http: previous.http,
    ...(previous.redis === undefined ? {} : { redis: previous.redis }),
    sessions: previous.sessions,
    pinning: previous.pinning,
    tracing: previous.tracing,
    ...(admin === undefined ? {} : { admin })
  }) as GatewayConfig
}
