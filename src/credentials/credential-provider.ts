import type { Principal } from '../auth/principal.ts'
import type { UpstreamConfig } from '../config/schema.ts'
import type { Secret } from '../auth/secret.ts'
import type { IncomingToken } from '../auth/incoming-token.ts'

/** Header name → value, as a request to the upstream carries them. */
export type CredentialHeaders = Readonly<Record<string, Secret>>

/** What a stdio child is started with besides its configured command: environment and arguments added. */
export interface ChildCredentials {
  env: Readonly<Record<string, Secret>>
  args: readonly string[]
}

/**
 * Whom a request to the upstream acts for. Undefined for the gateway's own connection (the one
 * that lists, and every call of a `shared` upstream).
 */
export interface CredentialRequest {
  readonly principal: Principal
  /** The bearer token of the principal's latest request (a token exchange trades it); never sent upstream. */
  readonly token?: IncomingToken | undefined
}

/**
 * How a request gets its upstream credential, one implementation per auth type. The connection
 * layer asks it on each send (HTTP) or at spawn (stdio) and never keeps what it answers, so a
 * provider may refresh a token between two requests of one connection.
 *
 * `who`: whom the request acts for (see CredentialRequest). A provider that needs a user's token
 * and is given none fails with SB_ERR_UPSTREAM_AUTH.
 */
export interface CredentialProvider {
  /** The auth type it serves: static, oauth, client_credentials, token_exchange. */
  readonly type: string
  headersFor: (upstream: UpstreamConfig, who: CredentialRequest | undefined) => Promise<CredentialHeaders>
  childEnvFor: (upstream: UpstreamConfig) => Promise<ChildCredentials>
  /**
   * Whether `who` must first connect their account at the upstream (oauth with no grant stored):
   * asked before a request of theirs is forwarded, so the connect flow starts instead of a doomed
   * send. Absent: never.
   */
  needsConnect?: (upstream: UpstreamConfig, who: CredentialRequest) => Promise<boolean>
  /**
   * The upstream answered HTTP 401 to a credential this provider gave for `who`: the cached token is
   * dropped and one fresh one sought (a refresh). True when one was had, so a call that is safe to
   * repeat may be sent once more; never loops. Absent: nothing to renew.
   */
  refused?: (upstream: UpstreamConfig, who: CredentialRequest | undefined) => Promise<boolean>
}

/** A provider bound to one connection: what its transport asks on each send. */
export type HeaderSource = () => Promise<CredentialHeaders>

/** `who` is read on each send: a principal's connection carries the token of their latest request. */
export function headerSource (provider: CredentialProvider, upstream: UpstreamConfig, who: () => CredentialRequest | undefined): HeaderSource {
  return () => provider.headersFor(upstream, who())
}
