import { type Principal, isSamePrincipal } from '../auth/principal.ts'
import type { GatewayConfig, UpstreamConfig } from '../config/schema.ts'
import { SwitchboardError } from '../errors.ts'
import type { UpstreamConnection } from './upstream-connection.ts'

/** Which cap refused a caller its own connection (also the `limit` label of switchboard_limit_refusals_total). */
export type SessionSlotLimit = 'maxSessionConnections' | 'sessionConnectionsPerPrincipal' | 'maxRunning'

/** What the ledger reads of the stdio upstreams' own processes (ProcessLifecycle), live at each claim. */
export interface SharedProcesses {
  /** Running now: connecting, ready, or stopping. */
  readonly running: number
  /** Of those, the ones the running cap may not stop to make room while sessions hold connections. */
  readonly pinned: number
  /** Whether a shared stdio upstream may need a process: then sessions leave it one slot. */
  readonly keepsSlot: boolean
}

/**
 * The slots sessions' own connections (isolation: session) take: at most maxSessionConnections per
 * upstream, at most limits.sessionConnectionsPerPrincipal of one principal's sessions per upstream,
 * and for stdio one process each, counted under upstreamDefaults.maxRunning with the upstreams' own.
 * A session's process takes a free slot only, never the last one the shared stdio upstreams need
 * (they start lazily and would otherwise wait out their call's timeout), and never stops another
 * process to make room: a claim that cannot have a slot now is refused now. Counted from the pool's
 * connections at each claim, so a slot is free the moment the pool lets go of its connection.
 */
export class SessionSlots {
  constructor (
    private readonly sessionConnections: () => Iterable<UpstreamConnection>,
    private readonly config: () => Pick<GatewayConfig, 'limits' | 'upstreamDefaults'>,
    private readonly shared: SharedProcesses,
    private readonly onRefused: ((limit: SessionSlotLimit) => void) | undefined
  ) {}

  /**
   * Throws SB_ERR_SESSION_LIMIT, naming the cap, when a session of `principal` may not open its own
   * connection to `upstream` now. Without auth every client is the one principal "anonymous": there
   * is no one to share among, so only the upstream's and the process caps apply.
   */
  claim (upstream: UpstreamConfig, principal: Principal | undefined): void {
    const who = principal?.via === 'none' ? undefined : principal
    let onUpstream = 0
    let ofPrincipal = 0
    for (const c of this.sessionConnections()) {
      if (c.name !== upstream.name) continue
      onUpstream++
      const holder = c.who()?.principal
      if (who !== undefined && holder !== undefined && isSamePrincipal(holder, who)) ofPrincipal++
    }
    const name = upstream.name
    if (onUpstream >= upstream.maxSessionConnections) this.refuse(name, 'maxSessionConnections', upstream.maxSessionConnections, `already serves ${onUpstream} sessions on their own connections (maxSessionConnections)`)
    const { limits, upstreamDefaults } = this.config()
    const share = limits.sessionConnectionsPerPrincipal
    if (who !== undefined && ofPrincipal >= share) this.refuse(name, 'sessionConnectionsPerPrincipal', share, `already serves ${ofPrincipal} sessions of principal ${who.id} on their own connections (limits.sessionConnectionsPerPrincipal: ${share})`)
    const cap = upstreamDefaults?.maxRunning
    if (upstream.transport !== 'stdio' || cap === undefined) return
    const sessions = this.processes()
    const { running, pinned, keepsSlot } = this.shared
    const kept = keepsSlot ? 1 : 0
    if (cap - sessions - running < 1 || cap - kept - pinned - sessions < 1) {
      this.refuse(name, 'maxRunning', cap, `cannot start a process for another session: ${sessions} sessions' and ${running} upstreams' processes run (upstreamDefaults.maxRunning: ${cap}${kept === 1 ? ', one kept for the shared upstreams' : ''})`)
    }
  }

  /** The processes sessions' own stdio connections hold now: they count toward maxRunning. */
  processes (): number {
    let held = 0
    for (const c of this.sessionConnections()) if (c.config.transport === 'stdio') held++
    return held
  }

  private refuse (upstream: string, limitName: SessionSlotLimit, limit: number, what: string): never {
    this.onRefused?.(limitName)
    throw sessionLimit(upstream, limitName, limit, what)
  }
}

/** SB_ERR_SESSION_LIMIT: the upstream cannot serve this caller on a connection of its own now; `limitName` says which cap (error-forms.ts words it for the client). */
export function sessionLimit (upstream: string, limitName: SessionSlotLimit | 'maxPrincipalConnections', limit: number, what: string): SwitchboardError {
  return new SwitchboardError('SB_ERR_SESSION_LIMIT', `upstream ${upstream} ${what}`, { details: { limit, limitName } })
}
