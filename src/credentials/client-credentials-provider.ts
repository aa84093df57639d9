import type { Logger } from 'pino'
import type { UpstreamConfig } from '../config/schema.ts'
import type { ClientCredentialsAuth } from '../config/upstream-auth-schema.ts'
import { SwitchboardError } from '../errors.ts'
import type { OnAuthOutcome } from './auth-outcome.ts'
import type { ChildCredentials, CredentialHeaders, CredentialProvider, CredentialRequest } from './credential-provider.ts'
import { bearerHeaders, isFresh, isLive, isSameToken } from './grant-freshness.ts'
import type { ConfiguredEndpoints } from './oauth/configured-endpoint.ts'
import { clientCredentials } from './oauth/token-requests.ts'
import { singleFlight } from './single-flight.ts'
import type { Grant, GrantKey, TokenVault } from './vault/token-vault.ts'

/** The vault's principal of a service account's token: one for every caller. */
export const SERVICE_PRINCIPAL = 'service'

export interface ClientCredentialsProviderOptions {
  vault: TokenVault
  endpoints: ConfiguredEndpoints
  log: Logger
  onOutcome?: OnAuthOutcome | undefined
}

const TYPE = 'client_credentials'
const NO_CHILD: ChildCredentials = Object.freeze({ env: Object.freeze({}), args: Object.freeze([]) })

function authOf (upstream: UpstreamConfig): ClientCredentialsAuth {
  if (upstream.auth?.type !== 'client_credentials') throw new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `upstream ${upstream.name} has no client_credentials auth`)
  return upstream.auth
}

/**
 * A service account's token (auth type client_credentials), the same for every principal: cached
 * until ahead of expiry, asked for once in this process and, through the vault's lock and record,
 * once across replicas. Without the vault (a store outage) the token is still had, just not shared.
 */
export class ClientCredentialsProvider implements CredentialProvider {
  readonly type = TYPE
  readonly #options: ClientCredentialsProviderOptions
  readonly #cache = new Map<string, Grant>()
  readonly #obtaining = singleFlight<Grant>()

  constructor (options: ClientCredentialsProviderOptions) {
    this.#options = options
  }

  async headersFor (upstream: UpstreamConfig, _who: CredentialRequest | undefined): Promise<CredentialHeaders> {
    const cached = this.#cache.get(upstream.name)
    if (cached !== undefined && isFresh(cached)) {
      this.#options.onOutcome?.(upstream.name, TYPE, 'ok')
      return bearerHeaders(cached)
    }
    return bearerHeaders(await this.#obtain(upstream, undefined))
  }

  async childEnvFor (_upstream: UpstreamConfig): Promise<ChildCredentials> {
    return NO_CHILD // config refuses auth on stdio upstreams
  }

  async refused (upstream: UpstreamConfig, _who: CredentialRequest | undefined): Promise<boolean> {
    const refusedGrant = this.#cache.get(upstream.name)
    this.#cache.delete(upstream.name)
    try {
      return !isSameToken(await this.#obtain(upstream, refusedGrant), refusedGrant)
    } catch (err: unknown) {
      this.#options.log.warn({ err, upstream: upstream.name }, 'no new service token after a 401')
      return false
    }
  }

  #obtain (upstream: UpstreamConfig, refusedGrant: Grant | undefined): Promise<Grant> {
    const key: GrantKey = { upstream: upstream.name, principal: SERVICE_PRINCIPAL }
    const { vault, log } = this.#options
    return this.#obtaining(upstream.name, async () => {
      let grant: Grant
      try {
        grant = await vault.exclusive(key, async () => {
          const stored = await vault.get(key)
          const usable = stored !== undefined && isFresh(stored) && !isSameToken(stored, refusedGrant)
          if (usable) return stored
          const fresh = await this.#request(upstream)
          await vault.put(key, fresh)
          return fresh
        })
      } catch (err: unknown) {
        if (err instanceof SwitchboardError && err.code === 'SB_ERR_UPSTREAM_TOKEN') throw err
        log.warn({ err, upstream: upstream.name }, 'token vault unavailable; obtaining the service token without sharing it')
        const cached = this.#cache.get(upstream.name)
        grant = cached !== undefined && isLive(cached) && refusedGrant === undefined ? cached : await this.#request(upstream)
      }
      this.#cache.set(upstream.name, grant)
      return grant
    })
  }

  async #request (upstream: UpstreamConfig): Promise<Grant> {
    const auth = authOf(upstream)
    try {
      const endpoint = await this.#options.endpoints(auth)
      const grant = await clientCredentials(endpoint, { scope: auth.scope, resource: auth.resource ?? upstream.url })
      this.#options.onOutcome?.(upstream.name, TYPE, 'refreshed')
      return grant
    } catch (err: unknown) {
      this.#options.onOutcome?.(upstream.name, TYPE, 'refresh_failed')
      throw err
    }
  }
}
