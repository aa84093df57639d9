// oidc-provider ships no types and @types/oidc-provider lags the 9.x line: this declares only the surface the test
// fixtures use (test/fixtures/authorization-server.ts), typed narrowly enough that strict mode catches misuse.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http'

  export interface OidcClient {
    readonly clientId: string
    grantTypeAllowed: (type: string) => boolean
  }

  export interface OidcContext {
    status: number
    body: unknown
    readonly oidc: {
      readonly params: Readonly<Record<string, unknown>> | undefined
      readonly client: OidcClient | undefined
      readonly provider: Provider
    }
  }

  export interface InteractionDetails {
    readonly uid: string
    readonly prompt: { readonly name: string, readonly details: Readonly<Record<string, unknown>> }
    readonly params: Readonly<Record<string, unknown>>
    readonly session?: { readonly accountId: string }
    readonly grantId?: string
  }

  export interface InteractionResults {
    login?: { accountId: string }
    consent?: { grantId: string }
    error?: string
    error_description?: string
  }

  export interface ResourceServerInfo {
    scope: string
    audience?: string
    accessTokenTTL?: number
    accessTokenFormat?: 'opaque' | 'jwt'
  }

  export class ResourceServer {
    constructor (identifier: string, info: ResourceServerInfo)
  }

  export class Grant {
    constructor (init: { accountId: string, clientId: string })
    static find (id: string): Promise<Grant | undefined>
    addOIDCScope (scope: string): void
    addResourceScope (resource: string, scope: string): void
    save (): Promise<string>
  }

  export class AccessToken {
    constructor (init: { accountId: string, client: OidcClient, scope?: string, gty?: string, extra?: Record<string, unknown> })
    resourceServer: ResourceServer | undefined
    readonly expiration: number
    readonly tokenType: string
    save (): Promise<string>
  }

  export type GrantTypeHandler = (ctx: OidcContext, next: () => Promise<void>) => Promise<void>

  export class Provider {
    constructor (issuer: string, configuration: object)
    readonly issuer: string
    readonly Grant: typeof Grant
    readonly AccessToken: typeof AccessToken
    readonly ResourceServer: typeof ResourceServer
    callback (): (request: IncomingMessage, response: ServerResponse) => void
    interactionDetails (request: IncomingMessage, response: ServerResponse): Promise<InteractionDetails>
    interactionFinished (request: IncomingMessage, response: ServerResponse, result: InteractionResults,
      options?: { mergeWithLastSubmission?: boolean }): Promise<void>
    registerGrantType (name: string, handler: GrantTypeHandler, params?: readonly string[], dupes?: readonly string[]): void
    on (event: string, listener: (ctx: OidcContext, error?: Error) => void): this
  }

  export const errors: {
    readonly InvalidGrant: new (description?: string) => Error
    readonly InvalidRequest: new (description?: string) => Error
    readonly InvalidTarget: new (description?: string) => Error
  }

  export default Provider
}
