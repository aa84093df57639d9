import type { Principal } from '../../auth/principal.ts'

/**
 * What one step of a connect came to, as switchboard_connect_flows_total{upstream,outcome} counts it:
 * started (sent to the authorization server), proven (a browser proved who is at it), identity_mismatch
 * (a browser proven as someone else than the principal the link or flow is for), link_reused,
 * link_expired, completed (a grant stored), denied (refused at the authorization server or the
 * identity provider, a wrong API key, or API-key principals refused by config).
 */
export type ConnectOutcome = 'started' | 'proven' | 'identity_mismatch' | 'link_reused' | 'link_expired' | 'completed' | 'denied'

export const CONNECT_OUTCOMES: readonly ConnectOutcome[] = ['started', 'proven', 'identity_mismatch', 'link_reused', 'link_expired', 'completed', 'denied']

/** The outcomes an audit line records: a connect completed or refused (never a token). */
export const AUDITED_OUTCOMES: ReadonlySet<ConnectOutcome> = new Set(['completed', 'identity_mismatch', 'link_reused', 'link_expired', 'denied'])

export interface ConnectEvent {
  readonly upstream: string
  readonly outcome: ConnectOutcome
  /** The principal the step was for, when known (the link's, the proven browser's). */
  readonly principal?: Principal | undefined
}

/** Told each step; must not throw. */
export type OnConnectEvent = (event: ConnectEvent) => void
