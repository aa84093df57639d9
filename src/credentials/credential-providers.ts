import type { UpstreamConfig } from '../config/schema.ts'
import type { CredentialProvider } from './credential-provider.ts'
import { StaticCredentialProvider } from './static-credential-provider.ts'

/** The auth types an upstream can be configured with; `static` is its configured headers and env. */
export type AuthType = 'static' | 'oauth' | 'client_credentials' | 'token_exchange'

/** The auth type of an upstream: its `auth.type`, else `static`. */
export function authTypeOf (upstream: UpstreamConfig): AuthType {
  return upstream.auth?.type ?? 'static'
}

/**
 * One provider per auth type, made on first use and shared by every upstream of that type (a
 * provider keeps per-upstream state itself, keyed by the config object or the upstream's name).
 */
export class CredentialProviders {
  readonly #factories: Partial<Record<AuthType, () => CredentialProvider>>
  readonly #made = new Map<AuthType, CredentialProvider>()

  constructor (factories: Partial<Record<AuthType, () => CredentialProvider>> = {}) {
    this.#factories = { static: () => new StaticCredentialProvider(), ...factories }
  }

  for (upstream: UpstreamConfig): CredentialProvider {
    const type = authTypeOf(upstream)
    let provider = this.#made.get(type)
    if (provider === undefined) {
      const factory = this.#factories[type]
      // A gateway built without the identity providers (createCredentialProviders) cannot serve this upstream.
      if (factory === undefined) throw new Error(`no credential provider for auth type ${type} (upstream ${upstream.name})`)
      provider = factory()
      this.#made.set(type, provider)
    }
    return provider
  }
}
