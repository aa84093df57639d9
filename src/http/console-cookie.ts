import type { IncomingHttpHeaders } from 'node:http'
import { csrfMatches, type ConsoleSignIn, type ConsoleSignIns } from '../ops/console-sign-ins.ts'

// The console's cookie and csrf header, as every admin-listener context reads them.

export const CONSOLE_COOKIE = 'switchboard_console'
export const CSRF_HEADER = 'x-switchboard-csrf'
/** Methods that change state: with the cookie they need the csrf header too. */
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** The console cookie's value in a Cookie header, or undefined. */
export function consoleCookieOf (header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1) continue
    if (part.slice(0, eq).trim() !== CONSOLE_COOKIE) continue
    const value = part.slice(eq + 1).trim()
    if (value !== '') return value
  }
  return undefined
}

/** The live sign-in a request's cookie names, or undefined. */
export function signInOf (headers: IncomingHttpHeaders, signIns: ConsoleSignIns): ConsoleSignIn | undefined {
  const cookie = consoleCookieOf(headers.cookie)
  return cookie === undefined ? undefined : signIns.find(cookie)
}

/** Whether a cookie-authenticated request may go on: a state-changing one needs the sign-in's csrf value. */
export function csrfOk (method: string, headers: IncomingHttpHeaders, signIn: ConsoleSignIn): boolean {
  if (!STATE_CHANGING.has(method)) return true
  const presented = headers[CSRF_HEADER]
  return csrfMatches(signIn, typeof presented === 'string' ? presented : undefined)
}

export const CSRF_REFUSAL = { error: 'csrf', message: `a console request that changes state needs header ${CSRF_HEADER} (from POST /admin/login or GET /admin/session)` }

export function setCookieHeader (value: string, maxAgeSeconds: number): string {
  return `${CONSOLE_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}`
}
