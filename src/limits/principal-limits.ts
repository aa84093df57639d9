import type { Principal } from '../auth/principal.ts'
import type { LimitsConfig } from '../config/limits-schema.ts'
import { type ErrorCode, SwitchboardError } from '../errors.ts'
import { refusalStatus, toRpcResponse } from '../protocol/error-forms.ts'
import type { JsonRpcError, JsonRpcResponse, RequestId } from '../protocol/json-rpc.ts'

/** A cap of the `limits` section counted here, by its config key (also the metric's `limit` label); sessionConnectionsPerPrincipal is counted by the pool (src/upstream/session-slots.ts). */
export type LimitName = Exclude<keyof LimitsConfig, 'sessionConnectionsPerPrincipal'>

const LIMIT_ERRORS: Readonly<Record<LimitName, ErrorCode>> = {
  sessionsPerPrincipal: 'SB_ERR_LIMIT_SESSIONS',
  streamsPerSession: 'SB_ERR_LIMIT_STREAMS',
  listenStreamsPerPrincipal: 'SB_ERR_LIMIT_LISTEN_STREAMS',
  inFlightPerPrincipal: 'SB_ERR_LIMIT_IN_FLIGHT'
}

/** What the client is told it should close, or wait for, to get a slot again. */
const REMEDY: Readonly<Record<LimitName, string>> = {
  sessionsPerPrincipal: 'close a session (DELETE) or let one idle out, then initialize again',
  streamsPerSession: 'close one of its streams, then try again',
  listenStreamsPerPrincipal: 'close a subscriptions/listen stream, then listen again',
  inFlightPerPrincipal: 'retry once one of its requests has finished'
}

/** A slot taken under a cap; `release` gives it back, once, however often it is called. */
export interface Slot { release: () => void }

/** Who a principal is for counting: the same identity as `isSamePrincipal`. */
export function principalKey (principal: Principal): string {
  return `${principal.via}:${principal.id}`
}

/**
 * The per-principal (and per-session) caps of a replica: how many sessions, streams, listen streams
 * and requests in flight each key holds now. Every admission takes a slot and every close path
 * releases it; a refusal is counted and explained, never logged with the principal's secrets.
 */
export class PrincipalLimits {
  private limits: Pick<LimitsConfig, LimitName>
  private readonly held: Record<LimitName, Map<string, number>> = {
    sessionsPerPrincipal: new Map(),
    streamsPerSession: new Map(),
    listenStreamsPerPrincipal: new Map(),
    inFlightPerPrincipal: new Map()
  }

  private readonly onRefused: (limit: LimitName) => void

  constructor (limits: Pick<LimitsConfig, LimitName>, onRefused: (limit: LimitName) => void = () => {}) {
    this.limits = limits
    this.onRefused = onRefused
  }

  /** A reload: new caps apply to the next admission; what is held above them stays until released. */
  reconfigure (limits: Pick<LimitsConfig, LimitName>): void {
    this.limits = limits
  }

  /**
   * A slot under `limit` for `key`, or the refusal (SB_ERR_LIMIT_*) when `key` holds as many as it may;
   * on the wire (src/protocol/error-forms.ts) JSON-RPC -32000 with `data["switchboard/error"]` (code,
   * limit, max), over HTTP 429 and, where waiting helps, Retry-After.
   */
  acquire (limit: LimitName, key: string): Slot | SwitchboardError {
    const max = this.limits[limit]
    if (this.count(limit, key) >= max) {
      this.onRefused(limit)
      return new SwitchboardError(LIMIT_ERRORS[limit], `Switchboard: ${describe(limit, max)}; ${REMEDY[limit]}`, { details: { limit, max } })
    }
    return this.hold(limit, key)
  }

  /** A slot taken whatever the count (a session another replica opened, adopted here): later admissions see it. */
  hold (limit: LimitName, key: string): Slot {
    const counts = this.held[limit]
    counts.set(key, (counts.get(key) ?? 0) + 1)
    let released = false
    return {
      release: () => {
        if (released) return
        released = true
        const left = (counts.get(key) ?? 1) - 1
        if (left > 0) counts.set(key, left)
        else counts.delete(key)
      }
    }
  }

  count (limit: LimitName, key: string): number {
    return this.held[limit].get(key) ?? 0
  }

  /** Keys holding at least one slot under `limit` (a test's way to see that nothing leaked). */
  holders (limit: LimitName): number {
    return this.held[limit].size
  }
}

function describe (limit: LimitName, max: number): string {
  switch (limit) {
    case 'sessionsPerPrincipal': return `this principal already has ${max} session(s) open on this gateway replica (limits.sessionsPerPrincipal)`
    case 'streamsPerSession': return `this session already has ${max} SSE stream(s) open (limits.streamsPerSession)`
    case 'listenStreamsPerPrincipal': return `this principal already has ${max} subscriptions/listen stream(s) open on this gateway replica (limits.listenStreamsPerPrincipal)`
    case 'inFlightPerPrincipal': return `this principal already has ${max} request(s) running on this gateway replica (limits.inFlightPerPrincipal)`
  }
}

export function isLimitRefusal (value: unknown): value is SwitchboardError {
  return value instanceof SwitchboardError && typeof value.details.limit === 'string' && value.details.limit in LIMIT_ERRORS
}

/** The refusal on the wire: its code's JSON-RPC form (src/protocol/error-forms.ts), which knows it for a refusal made here. */
export function limitRpcError (id: RequestId | null, refusal: SwitchboardError): JsonRpcError {
  return toRpcResponse(id, refusal)
}

/**
 * The HTTP side of an answer that is a limit's refusal made here (a copy of the response with the
 * same error object counts): status 429 and, where waiting helps, Retry-After in seconds; undefined
 * for any other answer.
 */
export function limitHttpStatus (response: JsonRpcResponse | undefined): { status: 429, retryAfterS: number | undefined } | undefined {
  const refused = refusalStatus(response)
  return refused?.status === 429 ? { status: 429, retryAfterS: refused.retryAfterS } : undefined
}
