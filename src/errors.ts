// Every Switchboard error, declared once with how it reaches the client. Codes are API: add, never rename.

/** JSON-RPC 2.0's error codes (the wire's; src/protocol/json-rpc.ts hands them on). */
export const RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  // SDK convention for transport-level errors; also what a 2026-07-28 client needs to see to fall back.
  TRANSPORT_ERROR: -32000
} as const

/** MCP's own codes beside JSON-RPC's (2026-07-28's are MODERN_ERROR in modern.ts). */
export const MCP_ERROR = {
  // SDK convention: a session id the server does not know (with HTTP 404).
  SESSION_NOT_FOUND: -32001,
  // 2025-11-25: a resource URI nobody serves (with `data.uri`).
  RESOURCE_NOT_FOUND: -32002,
  // 2025-11-25: the request needs the client to complete a URL elicitation first (passed through).
  URL_ELICITATION_REQUIRED: -32042
} as const

/**
 * How a code is answered (src/protocol/error-forms.ts builds the three forms from this):
 * - `rpc`: the JSON-RPC error code of its JSON-RPC form;
 * - `http`: the HTTP status of a refusal made over HTTP, where one applies (else the JSON-RPC error
 *   travels in a 200, or is not an HTTP answer at all); `retryAfterS`: its Retry-After, where waiting helps;
 * - `toolCall`: what a tools/call gets: an isError result that says what happened (`result`), or the
 *   JSON-RPC error (`error`); every code also has a tool-result form;
 * - `exposed`: false for a failure the client learns nothing of: a bare -32603 "Internal error", logged.
 */
export interface ErrorSpec {
  readonly message: string
  readonly rpc: number
  readonly http?: number
  readonly retryAfterS?: number
  readonly toolCall: 'result' | 'error'
  readonly exposed: boolean
}

const TABLE = {
  // Never an MCP answer: the CLI, a reload (the admin API answers an invalid config 400).
  SB_ERR_CONFIG_INVALID: { message: 'the configuration is invalid', rpc: RPC.INTERNAL_ERROR, http: 400, toolCall: 'error', exposed: false },
  SB_ERR_CONFIG_READ: { message: 'the configuration file could not be read', rpc: RPC.INTERNAL_ERROR, toolCall: 'error', exposed: false },
  SB_ERR_UPSTREAM_UNAVAILABLE: { message: 'the upstream is not connected', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_UPSTREAM_TIMEOUT: { message: 'the upstream did not answer in time', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_UPSTREAM_CLOSED: { message: 'the upstream connection closed', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_UPSTREAM_PROTOCOL: { message: 'the upstream broke the protocol', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_UPSTREAM_HTTP: { message: 'the upstream answered this request with an HTTP error status', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  // Not the upstream's fault but the credential's: never counted by its circuit breaker.
  SB_ERR_UPSTREAM_AUTH: { message: 'the upstream refused the gateway\'s credential for it (HTTP 401 or 403); it does not count against the upstream\'s circuit breaker', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  // The caller has not connected their account at this upstream (auth oauth): -32042 carries the URL to do it
  // (a client that can show it gets it as a URL elicitation instead). `details`: upstream, url, elicitationId.
  SB_ERR_UPSTREAM_CONNECT_REQUIRED: { message: 'the caller must connect their account at the upstream first (open the URL in the error data)', rpc: MCP_ERROR.URL_ELICITATION_REQUIRED, toolCall: 'error', exposed: true },
  // This caller's token could not be had (token exchange refused, refresh failed): theirs alone, never the upstream's breaker.
  SB_ERR_UPSTREAM_TOKEN: { message: 'the gateway could not obtain the caller\'s token for the upstream (token exchange or refresh refused)', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  // The OAuth callback or connect link is not valid (unknown, used, expired, or another principal's state).
  // The token vault's Redis (or file) cannot be read or written: callers keep serving the tokens they hold in memory.
  SB_ERR_TOKEN_STORE_UNAVAILABLE: { message: 'the token store cannot be reached right now; upstream tokens not already held by this replica cannot be read or saved', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_CONNECT_STATE: { message: 'the connect link or OAuth callback is not valid (unknown, already used, expired, or started by someone else)', rpc: RPC.INVALID_REQUEST, http: 400, toolCall: 'error', exposed: true },
  // The browser that completed (or tried to start) a connect is proven to be another principal than the
  // one the connect is for: nothing is stored (the phishing and mirror attacks of a forwarded link).
  SB_ERR_CONNECT_IDENTITY: { message: 'the person at the browser is not the principal this connect is for; nothing was connected', rpc: RPC.INVALID_REQUEST, http: 403, toolCall: 'error', exposed: true },
  // The authorization server (or the identity provider at a connect's sign-in) refused or did not grant:
  // the user pressed Deny, or the server answered an error. Nothing was stored.
  SB_ERR_CONNECT_DENIED: { message: 'the authorization server did not grant access (consent refused or an error); nothing was connected', rpc: RPC.INVALID_REQUEST, http: 400, toolCall: 'error', exposed: true },
  // http.connect.apiKeys: refuse, and the caller is an API-key principal: it cannot connect an account here.
  SB_ERR_CONNECT_REFUSED: { message: 'API-key principals cannot connect an upstream account on this gateway (http.connect.apiKeys: refuse); sign in with a JWT from the identity provider instead', rpc: RPC.INVALID_REQUEST, toolCall: 'error', exposed: true },
  // auth oauth: the upstream's authorization server offers no way for the gateway to have a client there
  // (no pre-registered clientId, no Client ID Metadata Document support, no Dynamic Client Registration).
  SB_ERR_UPSTREAM_OAUTH_CLIENT: { message: 'the gateway has no OAuth client at the upstream\'s authorization server: register one there and configure its clientId (and clientSecret)', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  // Policy rules decided at call time (when, annotations) and approvals (effect ask): the caller's own
  // tool errors. `details`: rule (its index), and for approvals the reason an operator gave.
  SB_ERR_POLICY_DENIED: { message: 'a policy rule refuses this call with these arguments', rpc: RPC.INVALID_PARAMS, toolCall: 'result', exposed: true },
  SB_ERR_APPROVAL_DENIED: { message: 'the call needed a human\'s approval and was denied', rpc: RPC.INVALID_PARAMS, toolCall: 'result', exposed: true },
  SB_ERR_APPROVAL_TIMEOUT: { message: 'the call needed a human\'s approval and none came in time', rpc: RPC.INVALID_PARAMS, toolCall: 'result', exposed: true },
  // The rule asks the client, and the client declared no elicitation (form mode): never a silent allow.
  SB_ERR_APPROVAL_UNAVAILABLE: { message: 'the call needs a human\'s approval, and this client cannot be asked (it declared no form elicitation)', rpc: RPC.INVALID_PARAMS, toolCall: 'result', exposed: true },
  // Guardrails: `details.kinds` names what was found, never the secret itself.
  SB_ERR_SECRET_IN_ARGUMENTS: { message: 'the call\'s arguments carry a secret; it was not sent to the upstream', rpc: RPC.INVALID_PARAMS, toolCall: 'result', exposed: true },
  SB_ERR_SECRET_IN_RESULT: { message: 'the tool\'s result carries a secret; it was withheld', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_RESULT_TOO_LARGE: { message: 'the tool\'s result is larger than guardrails.results.maxBytes allows; it was withheld', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_GUARDRAIL_DENIED: { message: 'the guardrail hook refused this call', rpc: RPC.INVALID_PARAMS, toolCall: 'result', exposed: true },
  SB_ERR_GUARDRAIL_UNAVAILABLE: { message: 'the guardrail hook could not be asked and guardrails.webhook.failMode is closed', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_TOOL_QUARANTINED: { message: 'the upstream changed this tool\'s definition after it was pinned; an operator must approve the change', rpc: RPC.INVALID_PARAMS, toolCall: 'result', exposed: true },
  SB_ERR_PIN_STORE: { message: 'the tool pin store could not be read or written', rpc: RPC.INTERNAL_ERROR, toolCall: 'error', exposed: false },
  SB_ERR_SESSION_LIMIT: { message: 'the upstream serves as many sessions on their own connections as it may', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_RATE_LIMITED: { message: 'a rate limit refused the call', rpc: RPC.TRANSPORT_ERROR, toolCall: 'result', exposed: true },
  // `details.limit`: which of the upstream's limits (memoryMb, cpuSeconds, openFiles, processes).
  SB_ERR_UPSTREAM_LIMIT: { message: 'the upstream\'s process was stopped by one of its resource limits while the call ran; it is being restarted', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_UPSTREAM_BUSY: { message: 'the upstream runs as many calls at once as it may and none finished in time', rpc: RPC.INTERNAL_ERROR, toolCall: 'result', exposed: true },
  SB_ERR_SESSION_STORE_UNAVAILABLE: { message: 'the session store cannot be read right now; the session may still be held by another replica', rpc: RPC.TRANSPORT_ERROR, http: 503, retryAfterS: 1, toolCall: 'error', exposed: true },
  SB_ERR_LIMIT_SESSIONS: { message: 'the principal has as many sessions open on this replica as limits.sessionsPerPrincipal allows', rpc: RPC.TRANSPORT_ERROR, http: 429, toolCall: 'error', exposed: true },
  SB_ERR_LIMIT_STREAMS: { message: 'the session has as many SSE streams open as limits.streamsPerSession allows', rpc: RPC.TRANSPORT_ERROR, http: 429, toolCall: 'error', exposed: true },
  SB_ERR_LIMIT_LISTEN_STREAMS: { message: 'the principal has as many subscriptions/listen streams open on this replica as limits.listenStreamsPerPrincipal allows', rpc: RPC.TRANSPORT_ERROR, http: 429, toolCall: 'error', exposed: true },
  // Waiting helps: a request finishes soon. Sessions and streams free only when the client closes one.
  SB_ERR_LIMIT_IN_FLIGHT: { message: 'the principal has as many requests running on this replica as limits.inFlightPerPrincipal allows', rpc: RPC.TRANSPORT_ERROR, http: 429, retryAfterS: 1, toolCall: 'error', exposed: true },
  // `details.tooDeep`: the client's request is invalid (-32600) rather than ours (-32603).
  SB_ERR_MESSAGE_UNSERIALIZABLE: { message: 'the message cannot be written as JSON (nested too deeply, or holding a value JSON cannot carry); only this message fails', rpc: RPC.INTERNAL_ERROR, toolCall: 'error', exposed: true },
  // A resumed stream's answer: the call may or may not have taken effect.
  SB_ERR_CALL_LOST: { message: 'the call\'s answer cannot be delivered: the gateway replica running it stopped, or the answer was lost; the call may or may not have taken effect', rpc: RPC.INTERNAL_ERROR, toolCall: 'error', exposed: true }
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof TABLE

export const ERRORS: { readonly [C in ErrorCode]: ErrorSpec } = TABLE

/** Each code's message (what it means). */
export const ERROR_CODES: { readonly [C in ErrorCode]: string } = Object.fromEntries(
  Object.entries(ERRORS).map(([code, spec]) => [code, spec.message])
) as { readonly [C in ErrorCode]: string }

export class SwitchboardError extends Error {
  readonly code: ErrorCode
  readonly details: Readonly<Record<string, unknown>>

  constructor (code: ErrorCode, message?: string, options?: { cause?: unknown, details?: Record<string, unknown> }) {
    super(message ?? ERRORS[code].message, options?.cause === undefined ? undefined : { cause: options.cause })
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
