import type { Principal } from '../auth/principal.ts'
import type { UpstreamConfig } from '../config/schema.ts'
import type { Secret } from '../auth/secret.ts'

/** Header name → value, as a request to the upstream carries them. */
export type CredentialHeaders = Readonly<Record<string, Secret>>

/** What a stdio child is started with besides its configured command: environment and arguments added. */
export interface ChildCredentials {
  env: Readonly<Record<string, Secret>>
  args: readonly string[]
}

/**
 * How a request gets its upstream credential, one implementation per auth type. The connection
 * layer asks it on each send (HTTP) or at spawn (stdio) and never keeps what it answers, so a
 * provider may refresh a token between two requests of one connection.
 *
 * `principal`: whom the request acts for; undefined for the gateway's own connection (the one
 * that lists, and every call of a `shared` upstream). A provider that needs a user's token and is
 * given none fails with SB_ERR_UPSTREAM_AUTH.
 */
export interface CredentialProvider {
  /** The auth type it serves (`static` today). */
  readonly type: string
  headersFor: (upstream: UpstreamConfig, principal: Principal | undefined) => Promise<CredentialHeaders>
  childEnvFor: (upstream: UpstreamConfig) => Promise<ChildCredentials>
}

/** A provider bound to one connection: what its transport asks on each send. */
export type HeaderSource = () => Promise<CredentialHeaders>

export function headerSource (provider: CredentialProvider, upstream: UpstreamConfig, principal: Principal | undefined): HeaderSource {
  return () => provider.headersFor(upstream, principal)
}
