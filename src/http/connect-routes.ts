import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Principal } from '../auth/principal.ts'
import type { ConnectFlows } from '../credentials/connect-flows.ts'
import { type GrantSummary, principalKey } from '../credentials/vault/token-vault.ts'
import { isSwitchboardError } from '../errors.ts'
import { type AuthHook, principalOf } from './auth-routes.ts'
import { prefersHtml, privateHeaders, sendPage, tableHtml } from './connect-pages.ts'

export interface ConnectRoutesOptions {
  flows: ConnectFlows
  /** Authenticates as /mcp does (the routes a user's own client calls, and /connect without a link). */
  authHook: AuthHook
  /** The Client ID Metadata Document for an upstream; undefined: the gateway serves none for it. */
  clientMetadata?: ((upstream: string) => Record<string, unknown> | undefined) | undefined
}

interface UpstreamParams { upstream: string }

/** The query of a request as the browser sent it (repeated keys kept): the flow reads it, nothing here logs it. */
function queryOf (request: FastifyRequest): URLSearchParams {
  const url = request.raw.url ?? ''
  const at = url.indexOf('?')
  return new URLSearchParams(at === -1 ? '' : url.slice(at + 1))
}

const iso = (ms: number | undefined): string | undefined => ms === undefined ? undefined : new Date(ms).toISOString()

/** A grant as /connections shows it: never a token. */
function connectionOf (grant: GrantSummary): Record<string, unknown> {
  return {
    upstream: grant.key.upstream,
    type: grant.type,
    ...(grant.scope === undefined ? {} : { scope: grant.scope }),
    ...(grant.expiresAt === undefined ? {} : { expiresAt: iso(grant.expiresAt) }),
    obtainedAt: iso(grant.obtainedAt),
    refreshable: grant.refreshable
  }
}

/**
 * The connect flow of per-user OAuth, on the public listener (Host and Origin checked by the edge
 * hook like every route): `/connect/:upstream` sends the browser to the authorization server,
 * `/oauth/callback` completes the grant, `/connections` lists and forgets the caller's grants, and
 * `/oauth/client/:upstream` serves the gateway's Client ID Metadata Document. Pages are plain HTML
 * that echo nothing of the query (a code or state never lands in a page, a log or a Referer).
 */
export async function connectRoutes (app: FastifyInstance, options: ConnectRoutesOptions): Promise<void> {
  const { flows, authHook } = options

  // A link handed out by the gateway stands in for the caller's credential: a browser has no bearer token.
  app.get<{ Params: UpstreamParams, Querystring: { link?: string } }>('/connect/:upstream', {
    onRequest: (request, reply, done) => {
      if (queryOf(request).has('link')) done()
      else authHook(request, reply, done)
    }
  }, async (request, reply) => {
    const { upstream } = request.params
    if (!flows.offers(upstream)) return await sendPage(reply, 404, 'Unknown upstream', ['This gateway has no upstream by that name whose account you can connect.'])
    const link = queryOf(request).get('link')
    let target: URL
    // Caught here: Fastify's own error log would print the request's URL, and with it the link.
    try {
      let principal: Principal
      let elicitationId: string | undefined
      if (link === null) {
        principal = principalOf(request)
      } else {
        const holder = await flows.principalOfLink(upstream, link)
        if (holder === undefined) return await sendPage(reply, 400, 'Link not valid', ['This connect link is not valid: it has expired, was already used, or is not for this upstream. Ask your agent for a new one (call the tool again).'])
        principal = holder.principal
        elicitationId = holder.elicitationId
      }
      target = await flows.authorizationUrl(upstream, principal, elicitationId)
    } catch (err: unknown) {
      request.log.warn({ err, upstream }, 'the connect flow could not start')
      return await sendPage(reply, 502, 'Cannot connect now', [`The gateway could not start the sign-in for ${upstream} (its authorization server may be unreachable). Try again shortly; if it persists, ask the operator.`])
    }
    return await privateHeaders(reply).redirect(target.href, 302)
  })

  app.get('/oauth/callback', async (request, reply) => {
    const query = queryOf(request)
    // The authorization server's own refusal (RFC 6749 §4.1.2.1): its words are not shown, they are not ours to vouch for.
    if (query.has('error')) {
      const refused = query.get('error') === 'access_denied'
      return await sendPage(reply, 400, refused ? 'Consent refused' : 'Not connected', [refused
        ? 'Consent was refused at the authorization server, so nothing was connected. Call the tool again to start over.'
        : 'The authorization server did not grant access, so nothing was connected. Call the tool again to start over.'])
    }
    try {
      const done = await flows.complete(query)
      return await sendPage(reply, 200, 'Connected', [`Connected to ${done.upstream}. You can close this page.`])
    } catch (err: unknown) {
      if (isSwitchboardError(err, 'SB_ERR_CONNECT_STATE')) {
        return await sendPage(reply, 400, 'Link not valid', ['This sign-in link is invalid or expired (or was already used, or started by someone else). Call the tool again to get a new one.'])
      }
      if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN')) {
        request.log.warn({ err }, 'the OAuth callback could not obtain a token')
        return await sendPage(reply, 502, 'Not connected', ['The authorization server did not issue a token, so nothing was connected. Try again; if it persists, ask the operator.'])
      }
      request.log.error({ err }, 'the OAuth callback failed')
      return await sendPage(reply, 500, 'Not connected', ['Something went wrong on the gateway, so nothing was connected. Try again; if it persists, ask the operator.'])
    }
  })

  app.get('/connections', { onRequest: authHook }, async (request, reply) => {
    const grants = await flows.list(principalKey(principalOf(request)))
    const connections = grants.map(connectionOf)
    if (!prefersHtml(request.headers.accept)) return await privateHeaders(reply).send({ connections })
    const rows = connections.map(c => [String(c.upstream), String(c.type), String(c.scope ?? ''), String(c.expiresAt ?? ''), String(c.obtainedAt), c.refreshable === true ? 'yes' : 'no'])
    return await sendPage(reply, 200, 'Your connections', [connections.length === 0 ? 'You have not connected any upstream account yet.' : `You have connected ${connections.length} upstream account(s).`],
      rows.length === 0 ? '' : tableHtml(['upstream', 'type', 'scope', 'expires', 'obtained', 'refreshable'], rows))
  })

  app.delete<{ Params: UpstreamParams }>('/connections/:upstream', { onRequest: authHook }, async (request, reply) => {
    const forgotten = await flows.disconnect(request.params.upstream, principalKey(principalOf(request)))
    if (!forgotten) return await privateHeaders(reply).code(404).send({ error: 'not_found', message: `you have no connection at upstream "${request.params.upstream}"` })
    return await privateHeaders(reply).code(204).send()
  })

  app.get<{ Params: UpstreamParams }>('/oauth/client/:upstream', async (request, reply) => {
    const document = options.clientMetadata?.(request.params.upstream)
    if (document === undefined) return await reply.code(404).send({ error: 'not_found' })
    return await reply.header('content-type', 'application/json').header('cache-control', 'max-age=300').send(JSON.stringify(document))
  })
}
