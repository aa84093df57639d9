import pino, { type Bindings, type ChildLoggerOptions, type Logger, type LoggerOptions } from 'pino'
import { boundForLog, DEFAULT_MAX_STRING_CHARS } from './log-bounds.ts'
import { secretRegistry } from '../config/secret-registry.ts'

/** Paths that may carry credentials; pino replaces them before a line is written (values the secret registry knows are replaced anywhere). */
export const REDACT_PATHS = [
  'req.headers.authorization', 'req.headers.cookie', 'req.headers["mcp-session-id"]',
  'headers.authorization', 'headers.Authorization', 'headers.cookie',
  'config.upstreams[*].headers', 'config.upstreams[*].env', 'upstream.headers', 'upstream.env'
]

export interface LogBounds {
  /** logging.maxStringChars: every string in a line (fields, message, child bindings) is cut here. */
  maxStringChars?: number
}

export function loggerOptions (level: string, bounds: LogBounds = {}): LoggerOptions {
  const max = bounds.maxStringChars ?? DEFAULT_MAX_STRING_CHARS
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { service: 'switchboard' },
    // Every line, whoever writes it: a client's clientInfo.name, a tool argument or an upstream's
    // error text is cut rather than written whole.
    hooks: {
      logMethod (args, method) {
        // pino's own rest array, made per call: bounded in place, no copy per line.
        const list = args as unknown[]
        // Registered secret values (an upstream's env, ...) never reach a line; nothing to do while there are none.
        const redact = secretRegistry.valueRedactor()
        for (let i = 0; i < list.length; i++) list[i] = boundForLog(list[i], max, 0, redact)
        method.apply(this, args)
      }
    }
  }
}

/**
 * Bounds the bindings of every child logger (a session's, an upstream's, Fastify's): they are
 * serialized once, at child(), and pino gives a child no formatter of ours. Children inherit the
 * method from the root, so patching the root covers them all.
 */
function boundChildren (logger: Logger, bounds: LogBounds): Logger {
  const max = bounds.maxStringChars ?? DEFAULT_MAX_STRING_CHARS
  type ChildFn = (this: Logger, bindings: Bindings, options?: ChildLoggerOptions) => unknown
  const child = logger.child as unknown as ChildFn
  const bounded: ChildFn = function (bindings, options) {
    return child.call(this, boundForLog(bindings, max, 0, secretRegistry.valueRedactor()) as Bindings, options)
  }
  logger.child = bounded as unknown as Logger['child']
  return logger
}

export function createLogger (level: string, destination?: pino.DestinationStream, bounds: LogBounds = {}): Logger {
  return boundChildren(destination === undefined ? pino(loggerOptions(level, bounds)) : pino(loggerOptions(level, bounds), destination), bounds)
}

/**
 * The process's logger: JSON lines on stdout, written asynchronously (a synchronous write per line,
 * the audit line of every call among them, cost ~9% of the gateway's CPU under load). Lines still
 * buffered are written synchronously when the process exits, whatever the way.
 */
export function createStdoutLogger (level: string, bounds: LogBounds = {}): Logger {
  const destination = pino.destination({ dest: 1, sync: false })
  process.on('exit', () => { try { destination.flushSync() } catch {} })
  return boundChildren(pino(loggerOptions(level, bounds), destination), bounds)
}
