import type { Response } from 'undici'

interface Cookie { value: string, path: string }

/** A cookie jar for one origin: enough for oidc-provider's interaction and session cookies, and the gateway's connect cookies. */
export class CookieJar {
  readonly #cookies = new Map<string, Cookie>()

  store (response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim())
      const eq = pair.indexOf('=')
      if (eq <= 0) continue
      const name = pair.slice(0, eq)
      let path = '/'
      let expired = false
      for (const attribute of attributes) {
        const [key = '', value = ''] = attribute.split('=', 2)
        const lower = key.toLowerCase()
        if (lower === 'path') path = value
        if (lower === 'max-age' && Number(value) <= 0) expired = true
        if (lower === 'expires' && Date.parse(value) <= Date.now()) expired = true
      }
      const key = `${name};${path}`
      if (expired) this.#cookies.delete(key)
      else this.#cookies.set(key, { value: pair.slice(eq + 1), path })
    }
  }

  header (url: URL): string | undefined {
    const sent: string[] = []
    for (const [key, cookie] of this.#cookies) {
      // RFC 6265 §5.1.4: /connect matches /connect and /connect/x, never /connections.
      const matches = url.pathname === cookie.path || url.pathname.startsWith(cookie.path.endsWith('/') ? cookie.path : `${cookie.path}/`)
      if (matches) sent.push(`${key.slice(0, key.indexOf(';'))}=${cookie.value}`)
    }
    return sent.length === 0 ? undefined : sent.join('; ')
  }
}
