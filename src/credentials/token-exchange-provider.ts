import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import type { TokenExchangeAuth } from '../config/upstream-auth-schema.ts'
import { SwitchboardError } from '../errors.ts'
import type { OnAuthOutcome } from './auth-outcome.ts'
import { BoundedMap } from './bounded-map.ts'
import type { ChildCredentials, CredentialHeaders, CredentialProvider, CredentialRequest } from './credential-provider.ts'
import { bearerHeaders, isFresh } from './grant-freshness.ts'
import type { ConfiguredEndpoints } from './oauth/configured-endpoint.ts'
import { TOKEN_TYPE, exchangeToken } from './oauth/token-requests.ts'
import { RefusalBackoff, isRefusal } from './refusal-backoff.ts'
import { singleFlight } from './single-flight.ts'
import { principalKey, type Grant, type GrantKey, type TokenVault } from './vault/token-vault.ts'

/** Exchanged tokens kept in memory, beyond which the least recently stored is dropped. */
export const MAX_CACHED_EXCHANGES = 10_000

export interface TokenExchangeProviderOptions {
  vault: TokenVault
  endpoints: ConfiguredEndpoints
  log: Logger
  onOutcome?: OnAuthOutcome | undefined
}

const TYPE = 'token_exchange'
const NO_CHILD: ChildCredentials = Object.freeze({ env: Object.freeze({}), args: Object.freeze([]) })

function authOf (upstream: UpstreamConfig): TokenExchangeAuth {
  if (upstream.auth?.type !== 'token_exchange') throw new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `upstream ${upstream.name} has no token_exchange auth`)
  return upstream.auth
}

/**
 * RFC 8693 on-behalf-of (auth type token_exchange): the caller's incoming token traded at the
 * configured token endpoint for one meant for the upstream, cached per (principal, upstream) until
 * shortly before it expires, in memory and in the vault (so other replicas reuse it). A failed
 * exchange fails that caller alone; nothing else's token, and never the incoming one, is sent instead.
 * A refused one is not asked again with the same subject token for `auth.retryAfterRefusalMs`.
 */
export class TokenExchangeProvider implements CredentialProvider {
  readonly type = TYPE
  readonly #options: TokenExchangeProviderOptions
  readonly #cache = new BoundedMap<Grant>(MAX_CACHED_EXCHANGES)
  readonly #exchanging = singleFlight<Grant>()
  /** Subject tokens the authorization server refused, per (upstream, principal): not presented again for a while. */
  readonly #refusals = new RefusalBackoff()

  constructor (options: TokenExchangeProviderOptions) {
    this.#options = options
  }

  async headersFor (upstream: UpstreamConfig, who: CredentialRequest | undefined): Promise<CredentialHeaders> {
    if (who === undefined) throw new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `upstream ${upstream.name} acts for each caller (token_exchange): it has no credential of the gateway's own`)
    const key: GrantKey = { upstream: upstream.name, principal: principalKey(who.principal) }
    const id = `${key.upstream}\n${key.principal}`
    const cached = this.#cache.get(id)
    if (cached !== undefined && isFresh(cached)) {
      this.#options.onOutcome?.(upstream.name, TYPE, 'ok')
      return bearerHeaders(cached)
    }
    return bearerHeaders(await this.#exchanging(id, () => this.#exchange(upstream, key, who, id)))
  }

  async childEnvFor (_upstream: UpstreamConfig): Promise<ChildCredentials> {
    return NO_CHILD // config refuses auth on stdio upstreams
  }

  async refused (upstream: UpstreamConfig, who: CredentialRequest | undefined): Promise<boolean> {
    if (who === undefined || who.token === undefined) return false
    const key: GrantKey = { upstream: upstream.name, principal: principalKey(who.principal) }
    const id = `${key.upstream}\n${key.principal}`
    this.#cache.delete(id)
    try {
      await this.#options.vault.delete(key)
    } catch (err: unknown) {
      this.#options.log.warn({ err, upstream: upstream.name }, 'token vault unavailable; the refused exchanged token stays there until it expires')
    }
    try {
      await this.#exchanging(id, () => this.#exchange(upstream, key, who, id, true))
      return true
    } catch {
      return false
    }
  }

  async #exchange (upstream: UpstreamConfig, key: GrantKey, who: CredentialRequest, id: string, skipStored = false): Promise<Grant> {
    const { vault, log, onOutcome } = this.#options
    if (!skipStored) {
      try {
        const stored = await vault.get(key)
        if (stored !== undefined && isFresh(stored)) {
          this.#cache.set(id, stored)
          onOutcome?.(upstream.name, TYPE, 'ok')
          return stored
        }
      } catch (err: unknown) {
        log.warn({ err, upstream: upstream.name }, 'token vault unavailable; exchanging the caller\'s token again')
      }
    }
    if (who.token === undefined) {
      onOutcome?.(upstream.name, TYPE, 'exchange_failed')
      throw new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `upstream ${upstream.name} exchanges the caller's identity-provider token (JWT) for its own, and this request carried none (an API key is never exchanged)`)
    }
    const auth = authOf(upstream)
    const backingOff = this.#refusals.backingOff(id, who.token)
    if (backingOff !== undefined) {
      onOutcome?.(upstream.name, TYPE, 'exchange_failed')
      throw backingOff
    }
    let grant: Grant
    try {
      grant = await exchangeToken(await this.#options.endpoints(auth), {
        subjectToken: who.token,
        subjectTokenType: TOKEN_TYPE.ACCESS_TOKEN,
        audience: auth.audience,
        // Neither named: the upstream itself is the resource (RFC 8707).
        resource: auth.resource ?? (auth.audience === undefined ? upstream.url : undefined),
        scope: auth.scope,
        requestedTokenType: auth.requestedTokenType
      })
    } catch (err: unknown) {
      onOutcome?.(upstream.name, TYPE, 'exchange_failed')
      const failure = err instanceof SwitchboardError && err.code === 'SB_ERR_UPSTREAM_TOKEN' ? err : new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', `the token exchange for upstream ${upstream.name} failed`, { cause: err })
      if (isRefusal(failure)) this.#refusals.refused(id, who.token, failure, auth.retryAfterRefusalMs)
      throw failure
    }
    this.#refusals.clear(id)
    this.#cache.set(id, grant)
    onOutcome?.(upstream.name, TYPE, 'exchanged')
    try {
      await vault.put(key, grant)
    } catch (err: unknown) {
      log.warn({ err, upstream: upstream.name }, 'token vault unavailable; the exchanged token is kept in memory only')
    }
    return grant
  }
}
