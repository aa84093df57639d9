/**
 * A browser for the test authorization server's login and consent pages (test/fixtures/authorization-interactions.ts):
 * follows redirects by hand, keeps cookies, fills in the login name and presses Allow (or Deny), as a user would.
 * Loopback only; at most MAX_STEPS requests per flow.
 */
import { fetch, type Headers, type Response } from 'undici'

const MAX_STEPS = 20

export interface ConsentOptions {
  /** the login name typed in; it becomes the token's sub */
  login: string
  /** press Allow (default) or Deny (the client then gets error=access_denied) */
  decision?: 'allow' | 'deny'
}

export interface CallbackResult {
  readonly status: number
  readonly body: string
  readonly headers: Headers
}

interface Cookie { value: string, path: string }

/** A cookie jar for one origin: enough for oidc-provider's interaction and session cookies. */
class CookieJar {
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
      if (url.pathname.startsWith(cookie.path)) sent.push(`${key.slice(0, key.indexOf(';'))}=${cookie.value}`)
    }
    return sent.length === 0 ? undefined : sent.join('; ')
  }
}

function formActions (html: string): string[] {
  return [...html.matchAll(/<form[^>]*action="([^"]+)"/g)].map((match) => match[1] ?? '')
}

/**
 * Runs the authorization server's interaction for `authorizationUrl` and returns where it finally redirects: the
 * client's redirect_uri with `code` and `state` (or `error`). That URL is not fetched.
 */
export async function consent (authorizationUrl: string | URL, options: ConsentOptions): Promise<URL> {
  const start = new URL(authorizationUrl)
  const jar = new CookieJar()
  let url = start
  let form: URLSearchParams | undefined
  for (let step = 0; step < MAX_STEPS; step++) {
    const headers: Record<string, string> = { accept: 'text/html' }
    const cookie = jar.header(url)
    if (cookie !== undefined) headers.cookie = cookie
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const response = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST', headers, body: form?.toString(), redirect: 'manual'
    })
    jar.store(response)
    const body = await response.text()
    form = undefined
    const location = response.headers.get('location')
    if (response.status >= 300 && response.status < 400 && location !== null) {
      const next = new URL(location, url)
      if (next.origin !== start.origin) return next
      url = next
      continue
    }
    if (response.status !== 200) throw new Error(`consent: ${url.pathname} answered ${response.status}: ${body.slice(0, 500)}`)
    const actions = formActions(body)
    const login = actions.find((action) => action.endsWith('/login'))
    const decided = actions.find((action) => action.endsWith(options.decision === 'deny' ? '/abort' : '/confirm'))
    if (login !== undefined) {
      url = new URL(login, url)
      form = new URLSearchParams({ login: options.login })
    } else if (decided !== undefined) {
      url = new URL(decided, url)
      form = new URLSearchParams()
    } else {
      throw new Error(`consent: ${url.pathname} is neither a login nor a consent page: ${body.slice(0, 500)}`)
    }
  }
  throw new Error(`consent: no redirect back to the client after ${MAX_STEPS} requests`)
}

/**
 * Fetches the redirect consent() returned (the client's callback), without following further redirects. An https
 * loopback URL is fetched over http: a gateway whose publicUrl says https (Client ID Metadata Documents must be https)
 * still listens without TLS in tests.
 */
export async function followToCallback (callbackUrl: string | URL, headers: Record<string, string> = {}): Promise<CallbackResult> {
  const url = new URL(callbackUrl)
  if (url.protocol === 'https:' && url.hostname === '127.0.0.1') url.protocol = 'http:'
  const response = await fetch(url, { headers: { accept: 'text/html', ...headers }, redirect: 'manual' })
  return { status: response.status, body: await response.text(), headers: response.headers }
}

/**
 * The whole connect flow as a user's browser runs it: opens `connectUrl` (with the caller's credentials in `headers`,
 * if the link needs them), which must redirect to the authorization server; consents; then loads the callback.
 */
export async function connectAsBrowser (
  connectUrl: string | URL,
  options: ConsentOptions & { headers?: Record<string, string> }
): Promise<CallbackResult & { readonly callbackUrl: URL }> {
  const response = await fetch(connectUrl, { headers: { accept: 'text/html', ...options.headers }, redirect: 'manual' })
  const body = await response.text()
  const location = response.headers.get('location')
  if (response.status < 300 || response.status >= 400 || location === null) {
    throw new Error(`connect link answered ${response.status} without a redirect: ${body.slice(0, 500)}`)
  }
  const callbackUrl = await consent(new URL(location, connectUrl), options)
  return { ...await followToCallback(callbackUrl), callbackUrl }
}
