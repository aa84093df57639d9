import type { FastifyInstance } from 'fastify'
import { SIGN_IN_TTL_MS } from '../credentials/browser/oidc-sign-in.ts'
import { isSwitchboardError } from '../errors.ts'
import { createLoginThrottle } from '../ops/login-throttle.ts'
import { SIGN_IN_COOKIE, cookieOf } from './connect-cookies.ts'
import { privateHeaders, sendPage } from './connect-pages.ts'
import { type ConnectContext, formOf, queryOf } from './connect-context.ts'
import * as views from './connect-views.ts'

export interface ConnectSignInRoutesOptions { ctx: ConnectContext }

/**
 * How a browser proves who is at it, on the connect routes: `POST /connect/signin` and
 * `GET /connect/signin/callback` sign a JWT principal in at the identity provider (OpenID Connect);
 * `POST /connect/signin/key` takes an API-key principal's key, once, throttled per address. Each ends
 * with the proof cookie set and the browser sent back to the connect page it came from.
 */
export async function connectSignInRoutes (app: FastifyInstance, options: ConnectSignInRoutesOptions): Promise<void> {
  const { flows, proof, cookies, paths, event } = options.ctx
  // Wrong keys per address: past 10 a minute every try is refused, a right key too.
  const throttle = createLoginThrottle()

  app.post('/connect/signin', async (request, reply) => {
    const form = formOf(request)
    const upstream = form.get('upstream') ?? ''
    if (!flows.offers(upstream)) return await views.unknownUpstream(reply)
    if (!options.ctx.csrfOk(request)) return await views.formRefused(reply)
    if (!proof.signIn.available()) return await views.signInChoice(reply, paths, upstream, { idp: false, key: false }, '')
    try {
      const started = await proof.signIn.start({ upstream, link: form.get('link') ?? undefined })
      cookies.signIn(reply, started.pending, SIGN_IN_TTL_MS)
      return await privateHeaders(reply).redirect(started.url.href, 303)
    } catch (err: unknown) {
      request.log.warn({ err, upstream }, 'the sign-in at the identity provider could not start')
      return await views.cannotStart(reply, upstream)
    }
  })

  app.get('/connect/signin/callback', async (request, reply) => {
    let signedIn
    try {
      signedIn = await proof.signIn.finish(queryOf(request), cookieOf(request, SIGN_IN_COOKIE))
    } catch (err: unknown) {
      cookies.signIn(reply, undefined)
      if (isSwitchboardError(err, 'SB_ERR_CONNECT_STATE')) {
        return await sendPage(reply, 400, 'Sign-in not valid', ['This sign-in was not started in this browser, or it expired. Open the connect link again.'])
      }
      request.log.warn({ err }, 'the sign-in at the identity provider did not succeed')
      return await sendPage(reply, isSwitchboardError(err, 'SB_ERR_CONNECT_DENIED') ? 403 : 502, 'Not signed in', ['The identity provider did not sign you in, so nothing was connected. Open the connect link again; if it persists, ask the operator.'])
    }
    cookies.signIn(reply, undefined)
    const { principal, back } = signedIn
    const issued = await proof.sessions.issue(principal)
    cookies.proof(reply, issued.cookie, proof.sessions.ttlMs)
    if (flows.offers(back.upstream)) event({ upstream: back.upstream, outcome: 'proven', principal })
    return await privateHeaders(reply).redirect(paths.connect(back.upstream, back.link), 303)
  })

  app.post('/connect/signin/key', async (request, reply) => {
    const form = formOf(request)
    const upstream = form.get('upstream') ?? ''
    const link = form.get('link') ?? undefined
    if (!flows.offers(upstream)) return await views.unknownUpstream(reply)
    if (!options.ctx.csrfOk(request)) return await views.formRefused(reply)
    if (proof.apiKeys() === 'refuse') {
      event({ upstream, outcome: 'denied' })
      return await views.keysRefused(reply, upstream)
    }
    const address = request.ip
    const waitMs = throttle.retryAfterMs(address)
    if (waitMs > 0) return await views.tooManyTries(reply, waitMs)
    const principal = proof.keyProof(form.get('key') ?? '')
    if (principal === undefined) {
      throttle.failed(address)
      event({ upstream, outcome: 'denied' })
      return await views.keyForm(reply, paths, upstream, undefined, { link, csrf: options.ctx.csrfFor(request, reply) }, 401, 'That key is not one of this gateway\'s API keys.')
    }
    throttle.succeeded(address)
    const issued = await proof.sessions.issue(principal)
    cookies.proof(reply, issued.cookie, proof.sessions.ttlMs)
    event({ upstream, outcome: 'proven', principal })
    return await privateHeaders(reply).redirect(paths.connect(upstream, link), 303)
  })
}
