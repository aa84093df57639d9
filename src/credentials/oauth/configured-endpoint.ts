import type * as oauth from 'oauth4webapi'
import type { ClientCredentialsAuth, TokenExchangeAuth } from '../../config/upstream-auth-schema.ts'
import type { AuthorizationServerDiscovery } from './authorization-server.ts'
import { secretAuth } from './client-registration.ts'
import type { TokenEndpoint } from './token-requests.ts'

/** The token endpoint of a service auth block: its issuer's metadata, or the endpoint as configured. */
export type ConfiguredEndpoints = (auth: ClientCredentialsAuth | TokenExchangeAuth) => Promise<TokenEndpoint>

export function createConfiguredEndpoints (discovery: AuthorizationServerDiscovery): ConfiguredEndpoints {
  // Per auth object: a reload makes new config objects, and so a new endpoint.
  const made = new WeakMap<object, Promise<TokenEndpoint>>()
  const make = async (auth: ClientCredentialsAuth | TokenExchangeAuth): Promise<TokenEndpoint> => {
    const as: oauth.AuthorizationServer = auth.issuer !== undefined
      ? await discovery.forIssuer(auth.issuer)
      // No metadata: the issuer is only a name here (no ID tokens are checked against it).
      : { issuer: new URL(auth.tokenEndpoint ?? '').origin, token_endpoint: auth.tokenEndpoint }
    return { as, client: { client: { client_id: auth.clientId }, auth: secretAuth(as, auth.clientSecret), origin: 'configured' } }
  }
  return (auth) => {
    let endpoint = made.get(auth)
    if (endpoint === undefined) {
      endpoint = make(auth)
      made.set(auth, endpoint)
      endpoint.catch(() => { if (made.get(auth) === endpoint) made.delete(auth) })
    }
    return endpoint
  }
}
