// RFC 5424 severities as MCP names them, least severe first.
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const
export type LogLevel = typeof LOG_LEVELS[number]

export function isLogLevel (value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value)
}

/** Whether a message at `level` passes a client's threshold; unknown levels pass (never hide what we cannot rank). */
export function passesLevel (level: unknown, threshold: LogLevel | undefined): boolean {
  if (threshold === undefined || !isLogLevel(level)) return true
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold)
}

/** The most verbose of several thresholds: what a shared upstream must send so every client gets its share. */
export function mostVerbose (levels: Iterable<LogLevel | undefined>): LogLevel | undefined {
  let best: number | undefined
  for (const level of levels) {
    if (level === undefined) continue
    const i = LOG_LEVELS.indexOf(level)
    if (best === undefined || i < best) best = i
  }
  return best === undefined ? undefined : LOG_LEVELS[best]
}
