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
