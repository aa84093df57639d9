import type { FastifyReply } from 'fastify'
import type { Principal } from '../auth/principal.ts'
import type { ConnectPaths } from './connect-context.ts'
import { formHtml, sendPage } from './connect-pages.ts'

// The pages of the connect flow, in the user's words. Every name in them is escaped by connect-pages.ts.

const who = (principal: Principal): string => principal.via === 'none' ? 'this gateway\'s only user' : principal.id

export async function unknownUpstream (reply: FastifyReply): Promise<FastifyReply> {
  return await sendPage(reply, 404, 'Unknown upstream', ['This gateway has no upstream by that name whose account you can connect.'])
}

export async function linkInvalid (reply: FastifyReply): Promise<FastifyReply> {
  return await sendPage(reply, 400, 'Link not valid', ['This connect link is not one this gateway made for this upstream. Ask your agent for a new one (call the tool again).'])
}

export async function linkExpired (reply: FastifyReply): Promise<FastifyReply> {
  return await sendPage(reply, 400, 'Link expired', ['This connect link has expired: links are short-lived. Ask your agent for a new one (call the tool again).'])
}

export async function linkUsed (reply: FastifyReply): Promise<FastifyReply> {
  return await sendPage(reply, 400, 'Link already used', ['This connect link has already been used: each link is good once. If you did not use it yourself, someone else opened it; nothing more happens through it. Ask your agent for a new one (call the tool again).'])
}

/** The browser is proven as someone other than the principal the link or flow is for. */
export async function notYou (reply: FastifyReply, signedInAs: Principal): Promise<FastifyReply> {
  return await sendPage(reply, 403, 'This link is not for you', [
    `This connect link was made for another user of this gateway, and this browser is signed in as ${who(signedInAs)}. Nothing was connected.`,
    'If someone sent you this link, do not use it: it would let their agent act as your account. Ask your own agent for a link of your own.'
  ])
}

/** Before any redirect to the authorization server: who connects what, and a button that POSTs. */
export async function confirm (reply: FastifyReply, paths: ConnectPaths, upstream: string, principal: Principal, fields: { link?: string | undefined, csrf: string }): Promise<FastifyReply> {
  return await sendPage(reply, 200, `Connect your account at ${upstream} for ${who(principal)}`, [
    `You are signed in to this gateway as ${who(principal)}. Continue to sign in at ${upstream}: the account you choose there is the one your agent will act as when it calls ${upstream}'s tools for ${who(principal)}.`,
    'If you did not ask your agent for this, close this page: nothing is connected.'
  ], formHtml(paths.connect(upstream), fields, `Continue to ${upstream}`))
}

/** An API-key principal proves possession of its key: typed once, POSTed, never in a URL. */
export async function keyForm (reply: FastifyReply, paths: ConnectPaths, upstream: string, principal: Principal | undefined, fields: { link?: string | undefined, csrf: string }, status = 200, problem?: string): Promise<FastifyReply> {
  const intro = principal === undefined
    ? `To connect your account at ${upstream}, first prove who you are on this gateway: type the API key your agent uses.`
    : `This link connects an account at ${upstream} for ${principal.id}. Type that principal's API key (the one your agent uses) to prove it is you.`
  return await sendPage(reply, status, 'Prove it is you', [...problem === undefined ? [] : [problem], intro, 'The key is checked once and kept nowhere: not in this page, a URL or a log.'],
    formHtml(paths.signInKey, { upstream, ...fields }, 'Prove it', { name: 'key', label: 'API key' }))
}

/** API-key principals may not connect here (http.connect.apiKeys: refuse). */
export async function keysRefused (reply: FastifyReply, upstream: string): Promise<FastifyReply> {
  return await sendPage(reply, 403, 'Cannot connect with an API key', [
    `This gateway does not let API-key principals connect an account at ${upstream} (http.connect.apiKeys: refuse). Sign in to your agent with your identity provider instead, or ask the operator.`
  ])
}

/** No link and no proof yet: the ways this gateway has to prove who is at the browser. */
export async function signInChoice (reply: FastifyReply, paths: ConnectPaths, upstream: string, ways: { idp: boolean, key: boolean }, csrf: string): Promise<FastifyReply> {
  if (!ways.idp && !ways.key) {
    return await sendPage(reply, 403, 'Cannot prove who you are', [`This gateway has no way to prove who is at this browser, so no account at ${upstream} can be connected from it. Call one of ${upstream}'s tools from your agent and open the link it gives you, or ask the operator.`])
  }
  const idp = ways.idp ? formHtml(paths.signIn, { upstream, csrf }, 'Sign in with your identity provider') : ''
  const key = ways.key ? formHtml(paths.signInKey, { upstream, csrf }, 'Prove it with your API key', { name: 'key', label: 'API key' }) : ''
  return await sendPage(reply, 200, `Sign in to connect ${upstream}`, ['First prove who you are on this gateway; then you choose the account to connect.'], idp + key)
}

export async function tooManyTries (reply: FastifyReply, retryAfterMs: number): Promise<FastifyReply> {
  return await sendPage(reply.header('retry-after', String(Math.ceil(retryAfterMs / 1000))), 429, 'Too many tries', ['Too many wrong keys from this address. Wait a minute and try again.'])
}

export async function formRefused (reply: FastifyReply): Promise<FastifyReply> {
  return await sendPage(reply, 403, 'Form not accepted', ['This form was not sent from this gateway\'s own page in this browser (or the page is too old). Open the link again.'])
}

export async function cannotStart (reply: FastifyReply, upstream: string): Promise<FastifyReply> {
  return await sendPage(reply, 502, 'Cannot connect now', [`The gateway could not start the sign-in for ${upstream} (the authorization server or identity provider may be unreachable). Try again shortly; if it persists, ask the operator.`])
}
