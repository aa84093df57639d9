// Every Switchboard error, declared once. Codes are API: add, never rename.

export const ERROR_CODES = {
  SB_ERR_CONFIG_INVALID: 'the configuration is invalid',
  SB_ERR_CONFIG_READ: 'the configuration file could not be read',
  SB_ERR_UPSTREAM_UNAVAILABLE: 'the upstream is not connected',
  SB_ERR_UPSTREAM_TIMEOUT: 'the upstream did not answer in time',
  SB_ERR_UPSTREAM_CLOSED: 'the upstream connection closed',
  SB_ERR_UPSTREAM_PROTOCOL: 'the upstream broke the protocol',
  SB_ERR_UPSTREAM_HTTP: 'the upstream answered this request with an HTTP error status',
  SB_ERR_UPSTREAM_AUTH: 'the upstream refused the gateway\'s credential for it (HTTP 401 or 403); it does not count against the upstream\'s circuit breaker',
  SB_ERR_TOOL_QUARANTINED: 'the upstream changed this tool\'s definition after it was pinned; an operator must approve the change',
  SB_ERR_PIN_STORE: 'the tool pin store could not be read or written',
  SB_ERR_SESSION_LIMIT: 'the upstream serves as many sessions on their own connections as it may',
  SB_ERR_RATE_LIMITED: 'a rate limit refused the call',
  SB_ERR_UPSTREAM_BUSY: 'the upstream runs as many calls at once as it may and none finished in time',
  SB_ERR_AUTH_REQUIRED: 'the request carries no credential',
  SB_ERR_AUTH_INVALID: 'the credential is not valid',
  SB_ERR_SESSION_STORE_UNAVAILABLE: 'the session store cannot be read right now; the session may still be held by another replica',
  SB_ERR_LIMIT_SESSIONS: 'the principal has as many sessions open on this replica as limits.sessionsPerPrincipal allows',
  SB_ERR_LIMIT_STREAMS: 'the session has as many SSE streams open as limits.streamsPerSession allows',
  SB_ERR_LIMIT_LISTEN_STREAMS: 'the principal has as many subscriptions/listen streams open on this replica as limits.listenStreamsPerPrincipal allows',
  SB_ERR_LIMIT_IN_FLIGHT: 'the principal has as many requests running on this replica as limits.inFlightPerPrincipal allows',
  SB_ERR_MESSAGE_UNSERIALIZABLE: 'the message cannot be written as JSON (nested too deeply, or holding a value JSON cannot carry); only this message fails'
} as const

export type ErrorCode = keyof typeof ERROR_CODES

export class SwitchboardError extends Error {
  readonly code: ErrorCode
  readonly details: Readonly<Record<string, unknown>>

  constructor (code: ErrorCode, message?: string, options?: { cause?: unknown, details?: Record<string, unknown> }) {
    super(message ?? ERROR_CODES[code], options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'SwitchboardError'
    this.code = code
    this.details = options?.details ?? {}
  }
}

/** The client went away or cancelled; no answer is owed. */
export class CallCancelledError extends Error {
  constructor () {
    super('cancelled by the client')
    this.name = 'CallCancelledError'
  }
}

export function isSwitchboardError (err: unknown, code?: ErrorCode): err is SwitchboardError {
  return err instanceof SwitchboardError && (code === undefined || err.code === code)
}
