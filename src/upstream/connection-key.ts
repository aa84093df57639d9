import { ANONYMOUS, type Principal } from '../auth/principal.ts'
import type { UpstreamConfig } from '../config/schema.ts'
import { principalKey } from '../limits/principal-limits.ts'

/** Which connection serves a request: the upstream's own, one of a session's, or one of a principal's. */
export type ConnectionKey = string & { readonly __connectionKey: true }

/** Whom a connection would serve: a downstream session, and the principal it acts for. */
export interface ConnectionRef {
  readonly id: string
  readonly principal?: Principal | undefined
}

// A character no upstream name can hold (names match ^[a-z][a-z0-9-]*$), so keys never collide.
const SEPARATOR = '\u0000'

/**
 * The key of the connection that serves `ref`'s requests to the upstream. Without a ref: the
 * upstream's own connection (the one that lists, and serves every `shared` call). A principal is
 * known by how it was established and its id (an API key's `alice` is not a JWT's `alice`); a ref
 * without one acts for ANONYMOUS, as every caller does when auth is off.
 */
export function keyFor (config: Pick<UpstreamConfig, 'name' | 'isolation'>, ref?: ConnectionRef): ConnectionKey {
  if (ref === undefined || config.isolation === 'shared') return config.name as ConnectionKey
  if (config.isolation === 'principal') return `${config.name}${SEPARATOR}principal${SEPARATOR}${principalKey(ref.principal ?? ANONYMOUS)}` as ConnectionKey
  return `${config.name}${SEPARATOR}session${SEPARATOR}${ref.id}` as ConnectionKey
}
