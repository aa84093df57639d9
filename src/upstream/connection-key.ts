import type { Principal } from '../auth/principal.ts'
import type { UpstreamConfig } from '../config/schema.ts'

/** Which connection serves a request: the upstream's own, or one of a session's (later: a principal's). */
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
 * upstream's own connection (the one that lists, and serves every `shared` call). Another
 * isolation (`principal`) is one more case here.
 */
export function keyFor (config: Pick<UpstreamConfig, 'name' | 'isolation'>, ref?: ConnectionRef): ConnectionKey {
  if (ref === undefined || config.isolation === 'shared') return config.name as ConnectionKey
  return `${config.name}${SEPARATOR}session${SEPARATOR}${ref.id}` as ConnectionKey
}
