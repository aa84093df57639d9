/**
 * A browser for the test authorization server's login and consent pages (test/fixtures/authorization-interactions.ts):
 * follows redirects by hand, keeps cookies, fills in the login name and presses Allow (or Deny), as a user would.
 * Loopback only; at most MAX_STEPS requests per flow.
 */
import { fetch, type Headers } from 'undici'
import { CookieJar } from './cookie-jar.ts'

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
