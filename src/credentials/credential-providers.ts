import type { UpstreamConfig } from '../config/schema.ts'
import type { CredentialProvider } from './credential-provider.ts'
import { StaticCredentialProvider } from './static-credential-provider.ts'

/** The auth types an upstream can be configured with. Coming: oauth, client_credentials, token_exchange. */
export type AuthType = 'static'

/** The auth type of an upstream: `static` (its configured headers and env) until config says more. */
export function authTypeOf (_upstream: UpstreamConfig): AuthType {
  return 'static'
}

/**
 * One provider per auth type, made on first use and shared by every upstream of that type (a
 * provider keeps per-upstream state itself, keyed by the config object).
 */
export class CredentialProviders {
  readonly #factories: Record<AuthType, () => CredentialProvider>
  readonly #made = new Map<AuthType, CredentialProvider>()

  constructor (factories: Partial<Record<AuthType, () => CredentialProvider>> = {}) {
    this.#factories = { static: () => new StaticCredentialProvider(), ...factories }
  }

  for (upstream: UpstreamConfig): CredentialProvider {
    const type = authTypeOf(upstream)
    let provider = this.#made.get(type)
    if (provider === undefined) {
      provider = this.#factories[type]()
      this.#made.set(type, provider)
    }
    return provider
  }
}
