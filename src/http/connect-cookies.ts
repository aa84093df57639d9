import type { FastifyReply, FastifyRequest } from 'fastify'

// The cookies of the connect routes: the browser's proof (who is at it), the binding its forms'
// CSRF tokens are made from, and a sign-in in progress. All HttpOnly and SameSite=Lax (the
// authorization server's redirect back is a top-level GET, which Lax lets through), Secure behind an
// https publicUrl, and scoped to the paths that read them, never the MCP routes.

export const PROOF_COOKIE = 'switchboard_connect'
export const BINDING_COOKIE = 'switchboard_connect_csrf'
export const SIGN_IN_COOKIE = 'switchboard_signin'

/** Where the proof is read: the connect pages, the OAuth callback (it must be the browser that started), the connections page. */
export const PROOF_PATHS: readonly string[] = ['/connect', '/oauth/callback', '/connections']
const CONNECT_PATH = '/connect'
const SIGN_IN_PATH = '/connect/signin'
const MAX_COOKIE_CHARS = 4096

/** A cookie's value in the request (the first one of that name, the most specific path), or undefined. */
export function cookieOf (request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie
  if (header === undefined || header.length > 16 * MAX_COOKIE_CHARS) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1 || part.slice(0, eq).trim() !== name) continue
    const value = part.slice(eq + 1).trim()
    if (value !== '' && value.length <= MAX_COOKIE_CHARS) return value
  }
  return undefined
}

export interface CookieWriter {
  proof: (reply: FastifyReply, value: string, maxAgeMs: number) => void
  binding: (reply: FastifyReply, value: string) => void
  signIn: (reply: FastifyReply, value: string | undefined, maxAgeMs?: number) => void
}

/** Set-Cookie lines for `secure` (an https publicUrl), under `prefix` (its path). Values are base64url or JWE compact: nothing to escape. */
export function createCookieWriter (secure: boolean, prefix = ''): CookieWriter {
  const line = (name: string, value: string, path: string, maxAgeS: number): string =>
    `${name}=${value}; Path=${path}; Max-Age=${maxAgeS}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`
  const add = (reply: FastifyReply, lines: string[]): void => {
    const before = reply.getHeader('set-cookie')
    const had = before === undefined ? [] : Array.isArray(before) ? before.map(String) : [String(before)]
    void reply.header('set-cookie', [...had, ...lines])
  }
  return {
    proof: (reply, value, maxAgeMs) => { add(reply, PROOF_PATHS.map(path => line(PROOF_COOKIE, value, prefix + path, Math.max(1, Math.floor(maxAgeMs / 1000))))) },
    // A day: it only binds this browser's forms, and proves nothing by itself.
    binding: (reply, value) => { add(reply, [line(BINDING_COOKIE, value, prefix + CONNECT_PATH, 86_400)]) },
    signIn: (reply, value, maxAgeMs = 0) => { add(reply, [line(SIGN_IN_COOKIE, value ?? 'gone', prefix + SIGN_IN_PATH, value === undefined ? 0 : Math.floor(maxAgeMs / 1000))]) }
  }
}
