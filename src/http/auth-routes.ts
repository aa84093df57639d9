import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { Authenticator, AuthOutcome } from '../auth/authenticator.ts'
import { IncomingToken } from '../auth/incoming-token.ts'
import { ANONYMOUS, type Principal } from '../auth/principal.ts'
import { WELL_KNOWN_PROTECTED_RESOURCE, metadataPaths, protectedResourceMetadata } from '../auth/protected-resource.ts'
import type { AuthConfig } from '../config/access-schema.ts'
import type { Metrics } from '../observability/metrics.ts'
import { rpcError, RPC } from '../protocol/json-rpc.ts'

export interface AuthRoutesOptions {
  /** The auth config in force (a reload may change it). */
  auth: () => AuthConfig | undefined
}

/**
 * RFC 9728 protected-resource metadata at the root and the path-suffixed well-known URLs of the
 * auth config in force; 404 without OAuth (jwt). These routes must stay reachable without a token:
 * clients read them after a 401 to find the authorization server.
 */
export async function authRoutes (app: FastifyInstance, options: AuthRoutesOptions): Promise<void> {
  let cached: { auth: AuthConfig, paths: string[], body: string } | undefined
  const documentFor = (path: string): string | undefined => {
    const auth = options.auth()
    if (auth === undefined) return undefined
    if (cached?.auth !== auth) {
      const doc = protectedResourceMetadata(auth)
      cached = { auth, paths: doc === undefined ? [] : metadataPaths(auth), body: JSON.stringify(doc) }
    }
    return cached.paths.includes(path) ? cached.body : undefined
  }
  const serve = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const body = documentFor(request.url.split('?')[0] ?? '')
    if (body === undefined) return await reply.code(404).send({ error: 'not_found' })
    // Public and the same for everyone, so any origin may read it: a browser-based OAuth client
    // discovers the authorization server here.
    return await reply.header('content-type', 'application/json').header('cache-control', 'max-age=300')
      .header('access-control-allow-origin', '*').send(body)
  }
  // Host is checked like everywhere; any Origin may read it (see above).
  app.get(WELL_KNOWN_PROTECTED_RESOURCE, { config: { anyOrigin: true } }, serve)
  app.get(`${WELL_KNOWN_PROTECTED_RESOURCE}/*`, { config: { anyOrigin: true } }, serve)
}

// Keyed by the raw request: the same object for every hook and handler, and for code that only sees `raw`.
const principals = new WeakMap<object, Principal>()
const tokens = new WeakMap<object, IncomingToken>()

/**
 * The principal the auth hook established for this request; ANONYMOUS when auth is off. A route that
 * the hook does not cover also gets ANONYMOUS, so register the hook on every route that calls this.
 */
export function principalOf (request: FastifyRequest): Principal {
  return principals.get(request.raw) ?? ANONYMOUS
}

/**
 * The bearer token of a request whose principal came from a JWT, for a token exchange toward an
 * upstream; undefined otherwise. An API key is the gateway's own secret: never handed on.
 */
export function tokenOf (request: FastifyRequest): IncomingToken | undefined {
  return tokens.get(request.raw)
}

/** The token of `Authorization: Bearer <token>`, which the authenticator has already found well formed. */
function bearerToken (authorization: string | string[] | undefined, claims: Readonly<Record<string, unknown>> | undefined): IncomingToken | undefined {
  if (typeof authorization !== 'string') return undefined
  const token = authorization.slice('bearer'.length).trim()
  return token === '' ? undefined : new IncomingToken(token, claims)
}

export type AuthHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

/**
 * An onRequest hook that authenticates `Authorization` and records the principal for principalOf, or
 * answers 401/503 with the challenge headers and a JSON-RPC error body. Callback style, so neither the
 * disabled path nor the API-key path allocates a promise; only a JWT verification awaits.
 */
export function createAuthHook (current: () => Authenticator, metrics: Pick<Metrics, 'authFailures'>): AuthHook {
  const counters = new Map<string, { inc: () => void }>()
  const count = (reason: string): void => {
    let counter = counters.get(reason)
    if (counter === undefined) {
      counter = metrics.authFailures.labels({ reason })
      counters.set(reason, counter)
    }
    counter.inc()
  }
  const settle = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction, outcome: AuthOutcome): void => {
    if (outcome.ok) {
      principals.set(request.raw, outcome.principal)
      // Only a JWT is exchanged (kept out of Principal, which goes to the session store); a request
      // with an API key allocates nothing here.
      if (outcome.principal.via === 'jwt') {
        const token = bearerToken(request.headers.authorization, outcome.claims)
        if (token !== undefined) tokens.set(request.raw, token)
      }
      done()
      return
    }
    count(outcome.reason)
    // Answered here: a callback-style hook that sends a reply does not call done.
    void reply.code(outcome.status).headers(outcome.headers).header('content-type', 'application/json')
      .send(rpcError(null, RPC.TRANSPORT_ERROR, outcome.message))
  }
  return (request, reply, done) => {
    // Read per request: a reload may turn auth on or off, or change the keys.
    const authenticator = current()
    if (!authenticator.enabled) {
      done()
      return
    }
    const outcome = authenticator.authenticate(request.headers.authorization)
    if (outcome instanceof Promise) outcome.then(o => { settle(request, reply, done, o) }, done)
    else settle(request, reply, done, outcome)
  }
}
