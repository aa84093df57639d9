import type { CredentialProvider } from '../credentials/credential-provider.ts'
import type { CancelSignal } from '../protocol/cancel-signal.ts'
import { isUnauthorized } from '../upstream/credential-failure.ts'
import type { UpstreamConnection } from '../upstream/upstream-connection.ts'
import { MIN_ATTEMPT_MS } from './retry-decision.ts'

/**
 * The 401 rule: when the upstream answers a request with HTTP 401, the provider that gave the
 * credential is told once (`refused`: it drops the token and seeks a fresh one, a refresh). When it
 * found one and the request is safe to repeat (`repeatable`: not a tools/call, or a read-only or
 * idempotent tool), the request is sent once more with what is left of its time; never more, so a
 * second 401 is the caller's SB_ERR_UPSTREAM_AUTH. Any other failure, and a 401 the provider found
 * no fresh credential for, stands as it was; the provider's own failure to renew replaces it.
 */
export async function renewingOnce<T> (provider: CredentialProvider & Required<Pick<CredentialProvider, 'refused'>>, connection: Pick<UpstreamConnection, 'config' | 'who'>, repeatable: boolean, signal: CancelSignal, timeoutMs: number, send: (timeoutMs: number) => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs
  try {
    return await send(timeoutMs)
  } catch (err: unknown) {
    if (!isUnauthorized(err)) throw err
    // A provider that fails to renew (a refresh token revoked: connect again) says more than the 401.
    const renewed = await provider.refused(connection.config, connection.who())
    const left = deadline - Date.now()
    if (!renewed || !repeatable || signal.aborted || left < MIN_ATTEMPT_MS) throw err
    return await send(left)
  }
}

/** The provider of an upstream whose credentials can be renewed after a 401; undefined when there is none. */
export function renewable (provider: CredentialProvider | undefined): (CredentialProvider & Required<Pick<CredentialProvider, 'refused'>>) | undefined {
  return provider?.refused === undefined ? undefined : provider as CredentialProvider & Required<Pick<CredentialProvider, 'refused'>>
}
