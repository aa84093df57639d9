import { readFile } from 'node:fs/promises'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { secretEquals, type ConsoleSignIns } from '../ops/console-sign-ins.ts'
import { visibleText } from '../protocol/visible-text.ts'
import { consoleAssets, type ConsoleAsset } from './console-assets.ts'
import { holdWrongToken, type AdminThrottleGate } from './admin-throttle-gate.ts'
import { CONSOLE_COOKIE, CSRF_REFUSAL, consoleCookieOf, csrfOk, setCookieHeader, signInOf } from './console-cookie.ts'

// The console's own routes on the admin listener, beside the admin API (its own context: the API's
// bearer hook does not apply): the sign-in exchange and the static files. The files are public and
// hold no secret; everything they show comes from /admin/*, behind the token or the cookie.

export interface ConsoleRoutesOptions {
  signIns: ConsoleSignIns
  /** The admin listener's throttle of wrong tokens, shared with the bearer hook. */
  throttle: AdminThrottleGate
  /** The admin token now (a reload may change it). */
  token: () => string
  /** switchboard_console_logins_total */
  logins?: { inc: (labels: { outcome: 'ok' | 'refused' | 'throttled' }) => void }
  /** Where the files are (tests); default: the package's src/console and node_modules. */
  files?: ReturnType<typeof consoleAssets>
}

const MAX_LOGIN_BODY_BYTES = 4 * 1024
/**
 * The console shows names, principals and arguments through the gateway's own visibleText: its
 * source, served as a module, so the browser and the CLI escape the same characters the same way.
 */
export const VISIBLE_TEXT_MODULE = `// Generated from src/protocol/visible-text.ts: the gateway's own function.\nexport ${visibleText.toString()}\n`

/** Assets may be cached briefly; the page itself and every API answer never. */
const ASSET_CACHE_CONTROL = 'max-age=60'

async function sendAsset (reply: FastifyReply, asset: ConsoleAsset, cacheControl: string): Promise<FastifyReply> {
  let body: Buffer
  try {
    body = await readFile(asset.file)
  } catch {
    return await reply.code(404).send({ error: 'not_found', message: 'no such console file' })
  }
  return await reply.header('content-type', asset.contentType).header('cache-control', cacheControl).send(body)
}

export async function consoleRoutes (app: FastifyInstance, options: ConsoleRoutesOptions): Promise<void> {
  const { signIns, throttle } = options
  const { assets, vendor } = options.files ?? consoleAssets()

  app.setErrorHandler(async (err: { statusCode?: number, message: string }, request: FastifyRequest, reply: FastifyReply) => {
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500
    if (status === 500) request.log.error({ err }, 'console request failed')
    return await reply.code(status).send({ error: status === 500 ? 'internal_error' : 'bad_request', message: status === 500 ? 'the request failed; see the gateway log' : err.message })
  })

  app.post('/admin/login', { bodyLimit: MAX_LOGIN_BODY_BYTES }, async (request, reply) => {
    const body: unknown = request.body
    const presented = typeof body === 'object' && body !== null && 'token' in body && typeof body.token === 'string' ? body.token : undefined
    // The right token signs in even from an address that is held back: whoever shares it (every
    // local process on 127.0.0.1) cannot keep an operator out. A success clears nothing, for the
    // same reason: it says nothing about the other callers at that address.
    if (!secretEquals(presented, options.token())) {
      if (await holdWrongToken(throttle, 'login', request.ip, reply)) {
        options.logins?.inc({ outcome: 'throttled' })
        return reply
      }
      options.logins?.inc({ outcome: 'refused' })
      return await reply.code(401).send({ error: 'unauthorized', message: 'the admin token is not valid' })
    }
    options.logins?.inc({ outcome: 'ok' })
    const { cookie, signIn } = signIns.create()
    const maxAge = Math.max(1, Math.floor((signIn.expiresAt - signIn.createdAt) / 1000))
    return await reply.header('set-cookie', setCookieHeader(cookie.reveal(), maxAge))
      .send({ csrf: signIn.csrf.reveal(), expiresAt: signIn.expiresAt })
  })

  app.post('/admin/logout', { bodyLimit: MAX_LOGIN_BODY_BYTES }, async (request, reply) => {
    const signIn = signInOf(request.headers, signIns)
    // A forced sign-out is a nuisance a foreign page must not cause either.
    if (signIn !== undefined && !csrfOk(request.method, request.headers, signIn)) return await reply.code(403).send(CSRF_REFUSAL)
    const cookie = consoleCookieOf(request.headers.cookie)
    if (cookie !== undefined) signIns.end(cookie)
    return await reply.code(204).header('set-cookie', setCookieHeader('', 0)).send()
  })

  app.get('/admin/session', async (request, reply) => {
    const signIn = signInOf(request.headers, signIns)
    if (signIn === undefined) return await reply.code(401).send({ error: 'unauthorized', message: `no console sign-in: POST /admin/login sets cookie ${CONSOLE_COOKIE}` })
    return { csrf: signIn.csrf.reveal(), expiresAt: signIn.expiresAt }
  })

  const index = assets.get('index.html')
  app.get('/', async (_request, reply) => {
    if (index === undefined) return await reply.code(404).send({ error: 'not_found', message: 'the console\'s index.html is missing' })
    return await sendAsset(reply, index, 'no-store')
  })

  app.get('/console/vendor/htm-preact.js', async (_request, reply) => await sendAsset(reply, vendor, ASSET_CACHE_CONTROL))

  app.get('/console/visible-text.js', async (_request, reply) =>
    await reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', ASSET_CACHE_CONTROL).send(VISIBLE_TEXT_MODULE))

  app.get<{ Params: { '*': string } }>('/console/*', async (request, reply) => {
    const asset = assets.get(request.params['*'])
    if (asset === undefined) return await reply.code(404).send({ error: 'not_found', message: 'no such console file' })
    return await sendAsset(reply, asset, asset.contentType.startsWith('text/html') ? 'no-store' : ASSET_CACHE_CONTROL)
  })
}
