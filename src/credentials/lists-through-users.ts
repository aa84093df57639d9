import type { UpstreamConfig } from '../config/schema.ts'

/**
 * An upstream whose own (gateway) connection has no credential to list with: per-user OAuth without
 * a `listing` service credential, or a token exchange (there is no caller's token to trade). Its
 * catalog comes from its users' connections, and is remembered for the others.
 */
export function listsThroughUsers (config: Pick<UpstreamConfig, 'auth'>): boolean {
  return (config.auth?.type === 'oauth' && config.auth.listing === undefined) || config.auth?.type === 'token_exchange'
}
