import { z } from 'zod'

// The `logging` block: bounds on what one log line may carry (the level stays `logLevel`).

/** Strings in log and audit lines are cut past this many characters (logging.maxStringChars). */
export const DEFAULT_MAX_STRING_CHARS = 1024

export const LOGGING_DEFAULTS = { maxStringChars: DEFAULT_MAX_STRING_CHARS } as const

export const loggingSchema = z.strictObject({
  maxStringChars: z.number().int().min(64).max(1_048_576).default(DEFAULT_MAX_STRING_CHARS)
    .describe('every string in a log or audit line (a client\'s name, a tool argument, an error text) is cut at this many characters, followed by …[truncated N chars]; read at start (a change needs a restart)')
}).describe('bounds on log lines')

export type LoggingConfig = z.output<typeof loggingSchema>
