import type { FastifyReply, FastifyRequest } from 'fastify'
import type { BrowserProof } from '../credentials/browser/browser-proof.ts'
import type { ProvenBrowser } from '../credentials/browser/browser-sessions.ts'
import type { OnConnectEvent } from '../credentials/browser/connect-outcome.ts'
import type { ConnectFlows } from '../credentials/connect-flows.ts'
import type { CookieWriter } from './connect-cookies.ts'

/** What the connect routes share: the flow, the proof, the cookies and the event sink. */
export interface ConnectContext {
  flows: ConnectFlows
  proof: BrowserProof
  cookies: CookieWriter
  paths: ConnectPaths
  event: OnConnectEvent
  /** The token a form of this browser must carry (its binding cookie is set here when missing). */
  csrfFor: (request: FastifyRequest, reply: FastifyReply) => string
  csrfOk: (request: FastifyRequest) => boolean
  /** The browser's proof, or a new one for the anonymous principal when the gateway runs without auth. */
  provenBrowser: (request: FastifyRequest, reply: FastifyReply) => Promise<ProvenBrowser | undefined>
}

/** The query of a request as the browser sent it (repeated keys kept): nothing here logs it. */
export function queryOf (request: FastifyRequest): URLSearchParams {
  const url = request.raw.url ?? ''
  const at = url.indexOf('?')
  return new URLSearchParams(at === -1 ? '' : url.slice(at + 1))
}

/** A form's fields (the connect routes parse every form body into one). */
export function formOf (request: FastifyRequest): URLSearchParams {
  return request.body instanceof URLSearchParams ? request.body : new URLSearchParams()
}

/**
 * The connect routes' paths as a browser reaches them: under the path of `http.publicUrl` (a proxy
 * may serve the gateway at https://tools.example.com/gateway), for redirects, forms and cookies.
 */
export interface ConnectPaths {
  /** The publicUrl's path, without a trailing slash ('' at the root). */
  readonly prefix: string
  /** GET /connect/<upstream>, with the link when there is one: where a sign-in and a key form lead back to. */
  connect: (upstream: string, link?: string) => string
  readonly signIn: string
  readonly signInKey: string
}

export function connectPaths (publicUrl: string): ConnectPaths {
  const prefix = new URL(publicUrl).pathname.replace(/\/+$/, '')
  return {
    prefix,
    connect: (upstream, link) => `${prefix}/connect/${encodeURIComponent(upstream)}${link === undefined ? '' : `?link=${encodeURIComponent(link)}`}`,
    signIn: `${prefix}/connect/signin`,
    signInKey: `${prefix}/connect/signin/key`
  }
}
