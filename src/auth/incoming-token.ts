import { inspect } from 'node:util'

const REDACTED = '[redacted]'

/**
 * The bearer token a request came with, kept apart from `Principal` (which is written to Redis)
 * for a future token exchange. It prints as "[redacted]" however it is printed (String, JSON,
 * util.inspect, pino); only `reveal()` gives the value.
 */
export class IncomingToken {
  readonly #value: string

  constructor (value: string) {
    this.#value = value
  }

  /** The token itself: for the one place that sends it on, never for a log line. */
  reveal (): string {
    return this.#value
  }

  toString (): string { return REDACTED }
  toJSON (): string { return REDACTED }
  [inspect.custom] (): string { return REDACTED }
}
