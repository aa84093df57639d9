import type { Principal } from '../auth/principal.ts'
import type { GrantSummary } from './vault/token-vault.ts'

/** A connect a caller was asked to make: the link they open, and the id of the elicitation that named it. */
export interface ConnectLink {
  /** `<publicUrl>/connect/<upstream>?link=<signed, short-lived, bound to principal and upstream>` */
  readonly url: string
  readonly elicitationId: string
}

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
  /** A link that lets `principal`'s browser start the connect without authenticating to the gateway (at most 10 minutes). */
  linkFor: (upstream: string, principal: Principal) => Promise<ConnectLink>
  /** The principal a link was handed to, when it is valid for `upstream`; undefined otherwise. */
  principalOfLink: (upstream: string, link: string) => Promise<{ principal: Principal, elicitationId?: string | undefined } | undefined>
  /**
   * Where `principal`'s browser goes to consent: the authorization server's URL with PKCE (S256),
   * `state` (signed, single use, 10 minutes, bound to principal and upstream), `resource` and scopes.
   */
  authorizationUrl: (upstream: string, principal: Principal, elicitationId?: string) => Promise<URL>
  /** /oauth/callback: checks `state`, exchanges the code, stores the grant. Rejects with SB_ERR_CONNECT_STATE or SB_ERR_UPSTREAM_TOKEN. */
  complete: (query: URLSearchParams) => Promise<CompletedConnect>
  /** Resolves once `principal` has a grant for `upstream` (whichever replica's callback stored it); rejects when `signal` aborts. */
  connected: (upstream: string, principal: Principal, signal: AbortSignal) => Promise<void>
  /** Revokes at the authorization server (RFC 7009) where it offers revocation, then forgets. True when there was a grant. */
  disconnect: (upstream: string, principalKey: string) => Promise<boolean>
  /** Grants, never tokens: one principal's (by principal key), or everyone's. */
  list: (principalKey?: string) => Promise<GrantSummary[]>
}
