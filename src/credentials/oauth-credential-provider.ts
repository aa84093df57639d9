import type { Logger } from 'pino'
import { secretsOf } from '../auth/secret.ts'
import type { UpstreamConfig } from '../config/schema.ts'
import { DEFAULT_RETRY_AFTER_REFUSAL_MS } from '../config/upstream-auth-schema.ts'
import { SwitchboardError, isSwitchboardError } from '../errors.ts'
import type { OnAuthOutcome } from './auth-outcome.ts'
import { BoundedMap } from './bounded-map.ts'
import type { ChildCredentials, CredentialHeaders, CredentialProvider, CredentialRequest } from './credential-provider.ts'
import { bearerHeaders, isFresh, isLive, isSameToken } from './grant-freshness.ts'
import { InvalidGrantError, refreshGrant } from './oauth/token-requests.ts'
import type { OAuthContexts } from './oauth/upstream-oauth.ts'
import { RefusalBackoff, isRefusal } from './refusal-backoff.ts'
import { singleFlight } from './single-flight.ts'
import { principalKey, type Grant, type GrantKey, type TokenVault } from './vault/token-vault.ts'

/** Grants kept in memory per (principal, upstream), beyond which the least recently stored is dropped. */
export const MAX_CACHED_GRANTS = 10_000

export interface OAuthCredentialProviderOptions {
  vault: TokenVault
  contexts: OAuthContexts
  log: Logger
  onOutcome?: OnAuthOutcome | undefined
}

const TYPE = 'oauth'
const NO_CHILD: ChildCredentials = Object.freeze({ env: Object.freeze({}), args: Object.freeze([]) })

function connectRequired (upstream: string): SwitchboardError {
  return new SwitchboardError('SB_ERR_UPSTREAM_CONNECT_REQUIRED', undefined, { details: { upstream } })
}

/** How long a cached grant is used without reading the vault again (a disconnect elsewhere, a refresh by another replica). */
const VAULT_RECHECK_MS = 5_000

/**
 * Per-user OAuth (auth type oauth): each principal's own grant from the vault, refreshed ahead of
 * expiry by exactly one replica (under `vault.exclusive`, reading the grant again inside: another
 * replica may have refreshed, and spending the same refresh token twice is theft to many servers).
 * The last good grant per key stays in memory so a store outage does not stop a live token.
 */
export class OAuthCredentialProvider implements CredentialProvider {
  readonly type = TYPE
  readonly #options: OAuthCredentialProviderOptions
  readonly #cache = new BoundedMap<Grant>(MAX_CACHED_GRANTS)
  /** When each cached grant was last read from the vault: a disconnect on another replica is seen within VAULT_RECHECK_MS. */
  readonly #checkedAt = new BoundedMap<number>(MAX_CACHED_GRANTS)
  readonly #renewing = singleFlight<Grant>()
  /** Refresh tokens the authorization server refused (other than invalid_grant), per key: not spent again for a while. */
  readonly #refusals = new RefusalBackoff()
  readonly #listing = new WeakMap<UpstreamConfig, CredentialHeaders>()

  constructor (options: OAuthCredentialProviderOptions) {
    this.#options = options
  }

  async headersFor (upstream: UpstreamConfig, who: CredentialRequest | undefined): Promise<CredentialHeaders> {
    if (who === undefined) return this.#listingHeaders(upstream)
    return bearerHeaders(await this.#grantFor(upstream, { upstream: upstream.name, principal: principalKey(who.principal) }))
  }

  async childEnvFor (_upstream: UpstreamConfig): Promise<ChildCredentials> {
    return NO_CHILD // config refuses auth on stdio upstreams
  }

  async needsConnect (upstream: UpstreamConfig, who: CredentialRequest): Promise<boolean> {
    const key: GrantKey = { upstream: upstream.name, principal: principalKey(who.principal) }
    const cached = this.#cache.get(cacheKey(key))
    if (cached !== undefined && isLive(cached) && this.#recent(cacheKey(key))) return false
    let stored: Grant | undefined
    try {
      stored = await this.#options.vault.get(key)
    } catch (err: unknown) {
      // The store is down: a live cached token still serves (see #grantFor).
      if (cached !== undefined && isLive(cached)) return false
      throw err
    }
    if (stored === undefined) {
      this.#cache.delete(cacheKey(key))
      this.#options.onOutcome?.(upstream.name, TYPE, 'connect_required')
    }
    return stored === undefined
  }

  async refused (upstream: UpstreamConfig, who: CredentialRequest | undefined): Promise<boolean> {
    if (who === undefined) return false
    const key: GrantKey = { upstream: upstream.name, principal: principalKey(who.principal) }
    const refusedGrant = this.#cache.get(cacheKey(key))
    this.#cache.delete(cacheKey(key))
    try {
      const grant = await this.#renew(upstream, key, refusedGrant)
      return !isSameToken(grant, refusedGrant)
    } catch (err: unknown) {
      this.#options.log.warn({ err, upstream: upstream.name }, 'no fresh upstream token after a 401')
      return false
    }
  }

  #listingHeaders (upstream: UpstreamConfig): CredentialHeaders {
    let headers = this.#listing.get(upstream)
    if (headers === undefined) {
      const listing = upstream.auth?.type === 'oauth' ? upstream.auth.listing : undefined
      if (listing === undefined) throw new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `upstream ${upstream.name} is per-user OAuth and has no listing credential (auth.listing.headers)`)
      headers = secretsOf(listing.headers)
      this.#listing.set(upstream, headers)
    }
    return headers
  }

  async #grantFor (upstream: UpstreamConfig, key: GrantKey): Promise<Grant> {
    const id = cacheKey(key)
    const cached = this.#cache.get(id)
    if (cached !== undefined && isFresh(cached) && this.#recent(id)) {
      this.#options.onOutcome?.(upstream.name, TYPE, 'ok')
      return cached
    }
    let stored: Grant | undefined
    try {
      stored = await this.#options.vault.get(key)
    } catch (err: unknown) {
      if (cached !== undefined && isLive(cached)) return this.#fromCacheDuringOutage(upstream, cached, err)
      throw err
    }
    if (stored === undefined) {
      this.#cache.delete(id)
      this.#options.onOutcome?.(upstream.name, TYPE, 'connect_required')
      throw connectRequired(upstream.name)
    }
    if (isFresh(stored)) {
      this.#remember(id, stored)
      this.#options.onOutcome?.(upstream.name, TYPE, 'ok')
      return stored
    }
    try {
      return await this.#renew(upstream, key, undefined)
    } catch (err: unknown) {
      if (!isTokenOutcome(err) && cached !== undefined && isLive(cached)) return this.#fromCacheDuringOutage(upstream, cached, err)
      throw err
    }
  }

  /** A disconnect made here: the cached grant goes at once (other replicas notice within VAULT_RECHECK_MS). */
  forget (key: GrantKey): void {
    this.#cache.delete(cacheKey(key))
    this.#checkedAt.delete(cacheKey(key))
  }

  #remember (id: string, grant: Grant): void {
    this.#cache.set(id, grant)
    this.#checkedAt.set(id, Date.now())
  }

  #recent (id: string): boolean {
    return Date.now() - (this.#checkedAt.get(id) ?? 0) < VAULT_RECHECK_MS
  }

  #fromCacheDuringOutage (upstream: UpstreamConfig, cached: Grant, err: unknown): Grant {
    this.#options.log.warn({ err, upstream: upstream.name }, 'token vault unavailable; using the cached upstream token while it lives')
    this.#options.onOutcome?.(upstream.name, TYPE, 'ok')
    return cached
  }

  /**
   * One refresh per key in this process, and one across replicas (the vault's lock). `refusedGrant`:
   * the upstream refused that token, so a grant is renewed even when it looks fresh, unless another
   * replica already holds a different live one.
   */
  #renew (upstream: UpstreamConfig, key: GrantKey, refusedGrant: Grant | undefined): Promise<Grant> {
    const id = cacheKey(key)
    const { vault, contexts, onOutcome } = this.#options
    return this.#renewing(id, () => vault.exclusive(key, async () => {
      const current = await vault.get(key)
      if (current === undefined) {
        this.#cache.delete(id)
        onOutcome?.(upstream.name, TYPE, 'connect_required')
        throw connectRequired(upstream.name)
      }
      const forced = refusedGrant !== undefined && (isSameToken(current, refusedGrant) || !isLive(current))
      if (!forced && isFresh(current)) {
        this.#remember(id, current)
        onOutcome?.(upstream.name, TYPE, 'ok')
        return current
      }
      const backingOff = this.#refusals.backingOff(id, current.refreshToken)
      if (backingOff !== undefined) {
        if (refusedGrant === undefined && isLive(current)) {
          onOutcome?.(upstream.name, TYPE, 'ok')
          return current
        }
        onOutcome?.(upstream.name, TYPE, 'refresh_failed')
        throw backingOff
      }
      let fresh: Grant
      try {
        const context = await contexts(upstream)
        fresh = await refreshGrant(context, current, context.resource)
      } catch (err: unknown) {
        if (err instanceof InvalidGrantError) {
          // Consent is gone (revoked, expired, or the refresh token was spent elsewhere): ask again.
          await vault.delete(key)
          this.#cache.delete(id)
          onOutcome?.(upstream.name, TYPE, 'connect_required')
          throw connectRequired(upstream.name)
        }
        onOutcome?.(upstream.name, TYPE, 'refresh_failed')
        if (isRefusal(err)) this.#refusals.refused(id, current.refreshToken, err, retryAfterRefusalMs(upstream))
        if (refusedGrant === undefined && isLive(current)) {
          this.#options.log.warn({ err, upstream: upstream.name }, 'refresh failed; the current upstream token is still live')
          this.#remember(id, current)
          return current
        }
        throw err
      }
      this.#refusals.clear(id)
      this.#remember(id, fresh)
      try {
        await vault.put(key, fresh)
      } catch (err: unknown) {
        // The token works; this replica keeps it. Another replica will find the old grant and ask the user again.
        this.#options.log.warn({ err, upstream: upstream.name }, 'token vault unavailable; the refreshed upstream token is kept in memory only')
      }
      onOutcome?.(upstream.name, TYPE, 'refreshed')
      return fresh
    }))
  }
}

/** A verdict on the grant (connect again, refused): the cache must not paper over it, unlike a store fault. */
function isTokenOutcome (err: unknown): boolean {
  return isSwitchboardError(err, 'SB_ERR_UPSTREAM_CONNECT_REQUIRED') || isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN')
}

function retryAfterRefusalMs (upstream: UpstreamConfig): number {
  return upstream.auth?.type === 'oauth' ? upstream.auth.retryAfterRefusalMs : DEFAULT_RETRY_AFTER_REFUSAL_MS
}

function cacheKey (key: GrantKey): string {
  return `${key.upstream}\n${key.principal}`
}
