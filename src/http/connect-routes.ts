import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ANONYMOUS } from '../auth/principal.ts'
import type { BrowserProof } from '../credentials/browser/browser-proof.ts'
import type { ProvenBrowser } from '../credentials/browser/browser-sessions.ts'
import { newBinding } from '../credentials/browser/browser-sessions.ts'
import type { OnConnectEvent } from '../credentials/browser/connect-outcome.ts'
import { SIGN_IN_TTL_MS } from '../credentials/browser/oidc-sign-in.ts'
import type { ConnectFlows, LinkStatus, ValidLink } from '../credentials/connect-flows.ts'
import { type GrantSummary, principalKey } from '../credentials/vault/token-vault.ts'
import { isSwitchboardError } from '../errors.ts'
import { type AuthHook, principalOf } from './auth-routes.ts'
import { BINDING_COOKIE, PROOF_COOKIE, cookieOf, createCookieWriter } from './connect-cookies.ts'
import { type ConnectContext, connectPaths, formOf, queryOf } from './connect-context.ts'
import { prefersHtml, privateHeaders, sendPage, tableHtml } from './connect-pages.ts'
import { connectSignInRoutes } from './connect-sign-in-routes.ts'
import * as views from './connect-views.ts'

export interface ConnectRoutesOptions {
  flows: ConnectFlows
  /** Who is at the browser: IdP sign-in, API key form, and the cookie that carries the proof. */
  proof: BrowserProof
  /** Authenticates as /mcp does (/connections and DELETE /connections/:upstream, called by a user's own client). */
  authHook: AuthHook
  /** The Client ID Metadata Document for an upstream; undefined: the gateway serves none for it. */
  clientMetadata?: ((upstream: string) => Record<string, unknown> | undefined) | undefined
  /** The gateway's external base URL: cookies carry Secure behind https, and paths its path. */
  publicUrl: string
  /** Each step of a connect, for switchboard_connect_flows_total and the audit log. */
  onEvent?: OnConnectEvent | undefined
}

interface UpstreamParams { upstream: string }

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
 * hook like every route). A link is a pointer, never a credential: `GET /connect/:upstream` first
 * proves who is at the browser (IdP sign-in for JWT principals, the key form for API-key ones), then
 * shows whom and what it connects with a button that POSTs; only that POST (CSRF-checked, spending
 * the link once) sends the browser to the authorization server, and only the same browser may
 * complete at `/oauth/callback`. Pages are plain HTML that echo nothing of the query.
 */
export async function connectRoutes (app: FastifyInstance, options: ConnectRoutesOptions): Promise<void> {
  const { flows, proof, authHook } = options
  const paths = connectPaths(options.publicUrl)
  const cookies = createCookieWriter(options.publicUrl.startsWith('https:'), paths.prefix)
  const event: OnConnectEvent = options.onEvent ?? (() => {})
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 8192 }, (_request, body, done) => {
    done(null, new URLSearchParams(String(body)))
  })

  const ctx: ConnectContext = {
    flows,
    proof,
    cookies,
    paths,
    event,
    csrfFor: (request, reply) => {
      let binding = cookieOf(request, BINDING_COOKIE)
      if (binding === undefined) {
        binding = newBinding()
        cookies.binding(reply, binding)
      }
      return proof.sessions.csrfToken(binding)
    },
    csrfOk: (request) => proof.sessions.csrfMatches(cookieOf(request, BINDING_COOKIE), formOf(request).get('csrf')),
    provenBrowser: async (request, reply) => {
      const proven = await proof.sessions.open(cookieOf(request, PROOF_COOKIE))
      if (proven !== undefined || proof.authEnabled()) return proven
      // Without auth every caller is the one anonymous principal: there is nobody else to tell apart.
      const issued = await proof.sessions.issue(ANONYMOUS)
      cookies.proof(reply, issued.cookie, proof.sessions.ttlMs)
      return issued.proven
    }
  }

  // Refusals answer their page and the handler returns `reply`. (Never the awaited page: awaiting a
  // sent FastifyReply resolves to undefined, which reads as "not refused".)

  /** A link that cannot be used: its page and event. */
  const refuseLink = async (link: Exclude<LinkStatus, ValidLink>, upstream: string, reply: FastifyReply): Promise<void> => {
    switch (link.status) {
      case 'expired': event({ upstream, outcome: 'link_expired' }); await views.linkExpired(reply); break
      case 'used': event({ upstream, outcome: 'link_reused' }); await views.linkUsed(reply); break
      case 'invalid': await views.linkInvalid(reply); break
    }
  }

  /** A browser proven as someone else than the link's principal: its page and event. */
  const mismatched = async (upstream: string, link: ValidLink | undefined, proven: ProvenBrowser, reply: FastifyReply): Promise<boolean> => {
    if (link === undefined || principalKey(link.principal) === principalKey(proven.principal)) return false
    event({ upstream, outcome: 'identity_mismatch', principal: link.principal })
    await views.notYou(reply, proven.principal)
    return true
  }

  /** No proof yet: the way that fits the link's principal, or every way this gateway has. */
  const askProof = async (request: FastifyRequest, reply: FastifyReply, upstream: string, link: ValidLink | undefined, token: string | undefined): Promise<FastifyReply> => {
    const via = link?.principal.via
    if (via === 'jwt' && proof.signIn.available()) {
      // The identity provider's own session usually makes this silent: no page of ours in between.
      const started = await proof.signIn.start({ upstream, link: token })
      cookies.signIn(reply, started.pending, SIGN_IN_TTL_MS)
      return await privateHeaders(reply).redirect(started.url.href, 302)
    }
    if (via === 'api-key') {
      if (proof.apiKeys() === 'refuse') {
        event({ upstream, outcome: 'denied', principal: link?.principal })
        return await views.keysRefused(reply, upstream)
      }
      return await views.keyForm(reply, paths, upstream, link?.principal, { link: token, csrf: ctx.csrfFor(request, reply) })
    }
    return await views.signInChoice(reply, paths, upstream, { idp: proof.signIn.available(), key: proof.apiKeys() === 'form' && proof.hasApiKeys() }, ctx.csrfFor(request, reply))
  }

  app.get<{ Params: UpstreamParams }>('/connect/:upstream', async (request, reply) => {
    const { upstream } = request.params
    if (!flows.offers(upstream)) return await views.unknownUpstream(reply)
    const token = queryOf(request).get('link') ?? undefined
    // Caught here: Fastify's own error log would print the request's URL, and with it the link.
    try {
      let link: ValidLink | undefined
      if (token !== undefined) {
        const status = await flows.readLink(upstream, token)
        if (status.status !== 'valid') { await refuseLink(status, upstream, reply); return reply }
        link = status
      }
      const proven = await ctx.provenBrowser(request, reply)
      if (proven === undefined) return await askProof(request, reply, upstream, link, token)
      if (await mismatched(upstream, link, proven, reply)) return reply
      return await views.confirm(reply, paths, upstream, link?.principal ?? proven.principal, { link: token, csrf: ctx.csrfFor(request, reply) })
    } catch (err: unknown) {
      request.log.warn({ err, upstream }, 'the connect page could not be shown')
      return await views.cannotStart(reply, upstream)
    }
  })

  // The only way to the authorization server: a POST from the confirmation page, by the proven browser.
  app.post<{ Params: UpstreamParams }>('/connect/:upstream', async (request, reply) => {
    const { upstream } = request.params
    if (!flows.offers(upstream)) return await views.unknownUpstream(reply)
    if (!ctx.csrfOk(request)) return await views.formRefused(reply)
    const token = formOf(request).get('link') ?? undefined
    try {
      const proven = await ctx.provenBrowser(request, reply)
      if (proven === undefined) return await privateHeaders(reply).redirect(paths.connect(upstream, token), 303)
      let principal = proven.principal
      let elicitationId: string | undefined
      if (token !== undefined) {
        const status = await flows.readLink(upstream, token)
        if (status.status !== 'valid') { await refuseLink(status, upstream, reply); return reply }
        if (await mismatched(upstream, status, proven, reply)) return reply
        if (!await flows.spendLink(status)) {
          event({ upstream, outcome: 'link_reused', principal: status.principal })
          return await views.linkUsed(reply)
        }
        principal = status.principal
        elicitationId = status.elicitationId
      }
      const target = await flows.authorizationUrl(upstream, principal, proven.id, elicitationId)
      event({ upstream, outcome: 'started', principal })
      return await privateHeaders(reply).redirect(target.href, 303)
    } catch (err: unknown) {
      request.log.warn({ err, upstream }, 'the connect flow could not start')
      return await views.cannotStart(reply, upstream)
    }
  })

  app.get('/oauth/callback', async (request, reply) => {
    const proven = await proof.sessions.open(cookieOf(request, PROOF_COOKIE))
    try {
      const done = await flows.complete(queryOf(request), proven?.id)
      event({ upstream: done.upstream, outcome: 'completed', principal: done.principal })
      return await sendPage(reply, 200, 'Connected', [`Connected to ${done.upstream}. You can close this page.`])
    } catch (err: unknown) {
      return await callbackRefused(err, request, reply, event)
    }
  })

  const proofOf = new WeakMap<object, ProvenBrowser>()
  // The user's own client sends its credential; a browser that proved itself on the connect pages may look too.
  const clientOrBrowser: AuthHook = (request, reply, done) => {
    proof.sessions.open(cookieOf(request, PROOF_COOKIE)).then((proven) => {
      if (proven === undefined) { authHook(request, reply, done); return }
      proofOf.set(request.raw, proven)
      done()
    }, done)
  }

  app.get('/connections', { onRequest: clientOrBrowser }, async (request, reply) => {
    const principal = proofOf.get(request.raw)?.principal ?? principalOf(request)
    const connections = (await flows.list(principalKey(principal))).map(connectionOf)
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

  await app.register(connectSignInRoutes, { ctx })
}

/** The OAuth callback's refusals, each a page of its own; nothing of the query is echoed or logged. */
async function callbackRefused (err: unknown, request: FastifyRequest, reply: FastifyReply, event: OnConnectEvent): Promise<FastifyReply> {
  const upstream = isSwitchboardError(err) && typeof err.details.upstream === 'string' ? err.details.upstream : undefined
  if (isSwitchboardError(err, 'SB_ERR_CONNECT_IDENTITY')) {
    if (upstream !== undefined) event({ upstream, outcome: 'identity_mismatch' })
    return await sendPage(reply, 403, 'Not connected', ['This sign-in was started in another browser, or by another user of this gateway: nothing was connected. If someone sent you a sign-in page, do not use it. To connect your own account, call the tool from your agent and open the link it gives you.'])
  }
  if (isSwitchboardError(err, 'SB_ERR_CONNECT_DENIED')) {
    if (upstream !== undefined) event({ upstream, outcome: 'denied' })
    return await sendPage(reply, 400, err.details.consentRefused === true ? 'Consent refused' : 'Not connected', [err.details.consentRefused === true
      ? 'Consent was refused at the authorization server, so nothing was connected. Call the tool again to start over.'
      : 'The authorization server did not grant access, so nothing was connected. Call the tool again to start over.'])
  }
  if (isSwitchboardError(err, 'SB_ERR_CONNECT_STATE')) {
    return await sendPage(reply, 400, 'Link not valid', ['This sign-in is invalid or expired (or was already used). Call the tool again to get a new link.'])
  }
  if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN')) {
    if (upstream !== undefined) event({ upstream, outcome: 'denied' })
    request.log.warn({ err }, 'the OAuth callback could not obtain a token')
    return await sendPage(reply, 502, 'Not connected', ['The authorization server did not issue a token, so nothing was connected. Try again; if it persists, ask the operator.'])
  }
  request.log.error({ err }, 'the OAuth callback failed')
  return await sendPage(reply, 500, 'Not connected', ['Something went wrong on the gateway, so nothing was connected. Try again; if it persists, ask the operator.'])
}
