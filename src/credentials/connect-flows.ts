import type { Principal } from '../auth/principal.ts'
import type { GrantSummary } from './vault/token-vault.ts'

/** A connect a caller was asked to make: the link they open, and the id of the elicitation that named it. */
export interface ConnectLink {
  /** `<publicUrl>/connect/<upstream>?link=<signed, short-lived, bound to principal and upstream>` */
  readonly url: string
  readonly elicitationId: string
}

/** A connect link as the gateway reads it when a browser opens it. */
export type LinkStatus =
  | { readonly status: 'valid', readonly upstream: string, readonly principal: Principal, readonly elicitationId: string, readonly expiresAt: number }
  /** Signed here, for this upstream, past its lifetime. */
  | { readonly status: 'expired' }
  /** Already spent by a browser (on any replica). */
  | { readonly status: 'used' }
  /** Not signed by this gateway, or for another upstream. */
  | { readonly status: 'invalid' }

export type ValidLink = Extract<LinkStatus, { status: 'valid' }>

/** What a completed OAuth callback connected. */
export interface CompletedConnect {
  readonly upstream: string
  readonly principal: Principal
  /** The elicitation the connect answered, when it began as one (its notifications/elicitation/complete). */
  readonly elicitationId?: string | undefined
}

/**
 * The per-user OAuth connect flow (auth type oauth), as the routes and the connect gate use it.
 * Domain code, free of Fastify: the routes in http/ turn these into redirects and pages.
 */
export interface ConnectFlows {
  /** Whether `upstream` has per-user OAuth (the others have no connect flow). */
  offers: (upstream: string) => boolean
  /**
   * A link naming `principal` and `upstream` (signed, short-lived, good once). It is a pointer, never
   * a credential: whoever opens it must still prove at the browser that they are `principal`.
   * Rejects with SB_ERR_CONNECT_REFUSED when such a principal cannot connect here.
   */
  linkFor: (upstream: string, principal: Principal) => Promise<ConnectLink>
  /** What a link opened for `upstream` is: valid (whose, until when), expired, used or invalid. Reads, spends nothing. */
  readLink: (upstream: string, link: string) => Promise<LinkStatus>
  /** Spends a valid link: true for the one caller, across replicas, that spent it; false when it was already spent. */
  spendLink: (link: ValidLink) => Promise<boolean>
  /**
   * Where `principal`'s browser goes to consent: the authorization server's URL with PKCE (S256),
   * `state` (signed, single use, 10 minutes, bound to principal, upstream and `browser`, the proven
   * browser's id), `resource` and scopes. Call it only for a browser proven to be `principal`.
   */
  authorizationUrl: (upstream: string, principal: Principal, browser: string, elicitationId?: string) => Promise<URL>
  /**
   * /oauth/callback: checks `state`, that `browser` (the proven browser's id, undefined when none is)
   * is the one the flow was started by, exchanges the code, stores the grant. Rejects with
   * SB_ERR_CONNECT_STATE, SB_ERR_CONNECT_IDENTITY (another browser: nothing stored) or SB_ERR_UPSTREAM_TOKEN.
   */
  complete: (query: URLSearchParams, browser: string | undefined) => Promise<CompletedConnect>
  /** Resolves once `principal` has a grant for `upstream` (whichever replica's callback stored it); rejects when `signal` aborts. */
  connected: (upstream: string, principal: Principal, signal: AbortSignal) => Promise<void>
  /** Revokes at the authorization server (RFC 7009) where it offers revocation, then forgets. True when there was a grant. */
  disconnect: (upstream: string, principalKey: string) => Promise<boolean>
  /** Grants, never tokens: one principal's (by principal key), or everyone's. */
  list: (principalKey?: string) => Promise<GrantSummary[]>
}
