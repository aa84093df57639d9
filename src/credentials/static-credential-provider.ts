import type { UpstreamConfig } from '../config/schema.ts'
import type { ChildCredentials, CredentialHeaders, CredentialProvider, CredentialRequest } from './credential-provider.ts'
import { secretsOf } from '../auth/secret.ts'

interface Prepared { headers: Promise<CredentialHeaders>, child: Promise<ChildCredentials> }

/**
 * Today's credentials: the upstream's configured `headers` (HTTP) and `env` (stdio), the same for
 * every principal. Each config object is wrapped once, so a send costs no allocation.
 */
export class StaticCredentialProvider implements CredentialProvider {
  readonly type = 'static'
  readonly #prepared = new WeakMap<UpstreamConfig, Prepared>()

  headersFor (upstream: UpstreamConfig, _who?: CredentialRequest): Promise<CredentialHeaders> {
    return this.#prepare(upstream).headers
  }

  childEnvFor (upstream: UpstreamConfig): Promise<ChildCredentials> {
    return this.#prepare(upstream).child
  }

  #prepare (upstream: UpstreamConfig): Prepared {
    let prepared = this.#prepared.get(upstream)
    if (prepared === undefined) {
      prepared = {
        headers: Promise.resolve(secretsOf(upstream.headers)),
        child: Promise.resolve(Object.freeze({ env: secretsOf(upstream.env), args: Object.freeze([]) }))
      }
      this.#prepared.set(upstream, prepared)
    }
    return prepared
  }
}
