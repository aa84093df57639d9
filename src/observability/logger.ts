import pino, { type Logger, type LoggerOptions } from 'pino'

/** Paths that may carry credentials; pino replaces them before a line is written. */
export const REDACT_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'req.headers["mcp-session-id"]',
  'headers.authorization', 'headers.Authorization', 'headers.cookie',
  'config.upstreams[*].headers', 'config.upstreams[*].env', 'upstream.headers', 'upstream.env'
]

export function loggerOptions (level: string): LoggerOptions {
  return { level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, base: { service: 'switchboard' } }
}

export function createLogger (level: string, destination?: pino.DestinationStream): Logger {
  return destination === undefined ? pino(loggerOptions(level)) : pino(loggerOptions(level), destination)
}

/**
 * The process's logger: JSON lines on stdout, written asynchronously (a synchronous write per line,
 * the audit line of every call among them, cost ~9% of the gateway's CPU under load). Lines still
 * buffered are written synchronously when the process exits, whatever the way.
 */
export function createStdoutLogger (level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false })
  process.on('exit', () => { try { destination.flushSync() } catch {} })
  return pino(loggerOptions(level), destination)
}
