/**
 * A scripted browser for the gateway's connect pages: keeps the gateway's cookies, reads the forms of its pages
 * (action, hidden fields, a password input), and walks a connect as a user would: open the link, prove who is at the
 * browser (type an API key, or sign in at the identity provider with test/helpers/consent.ts), press the button of the
 * confirmation page. Redirects are followed by hand, at most MAX_STEPS per walk; loopback only.
 */
import { fetch, type Headers } from 'undici'
import { consent, type CallbackResult, type ConsentOptions } from './consent.ts'
import { CookieJar } from './cookie-jar.ts'

const MAX_STEPS = 12

/** How the browser proves who is at it: the principal's API key, or the login name at the identity provider. */
export type BrowserProofStep = { apiKey: string } | { idpLogin: string }

export interface Form {
  readonly action: URL
  readonly fields: Readonly<Record<string, string>>
  /** The name of the form's password input, when it has one (the API key form). */
  readonly secret?: string | undefined
}

export interface Page {
  readonly url: URL
  readonly status: number
  readonly body: string
  readonly headers: Headers
  /** The redirect's target, resolved. */
  readonly location?: URL | undefined
  readonly forms: readonly Form[]
}

const unescape = (text: string): string => text.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')

function formsOf (html: string, base: URL): Form[] {
  return [...html.matchAll(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)].map((match) => {
    const fields: Record<string, string> = {}
    let secret: string | undefined
    for (const input of (match[2] ?? '').matchAll(/<input([^>]*)>/g)) {
      const attrs = input[1] ?? ''
      const name = unescape(/name="([^"]*)"/.exec(attrs)?.[1] ?? '')
      if (/type="password"/.test(attrs)) secret = name
      else fields[name] = unescape(/value="([^"]*)"/.exec(attrs)?.[1] ?? '')
    }
    return { action: new URL(unescape(match[1] ?? ''), base), fields, secret }
  })
}

/** An https loopback URL (a publicUrl that says https) is fetched over http: the test gateway listens without TLS. */
function plain (url: URL): URL {
  const out = new URL(url)
  if (out.protocol === 'https:' && out.hostname === '127.0.0.1') out.protocol = 'http:'
  return out
}

export class GatewayBrowser {
  readonly jar = new CookieJar()

  async get (url: string | URL): Promise<Page> {
    return await this.#send(new URL(url), undefined)
  }

  async submit (form: Form, extra: Record<string, string> = {}): Promise<Page> {
    return await this.#send(form.action, new URLSearchParams({ ...form.fields, ...extra }))
  }

  async #send (target: URL, body: URLSearchParams | undefined): Promise<Page> {
    const url = plain(target)
    const headers: Record<string, string> = { accept: 'text/html' }
    const cookie = this.jar.header(url)
    if (cookie !== undefined) headers.cookie = cookie
    if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const response = await fetch(url, { method: body === undefined ? 'GET' : 'POST', headers, body: body?.toString(), redirect: 'manual' })
    this.jar.store(response)
    const text = await response.text()
    const location = response.headers.get('location')
    return { url, status: response.status, body: text, headers: response.headers, location: location === null ? undefined : new URL(location, url), forms: formsOf(text, url) }
  }

  /**
   * Opens `link`, proves who is at the browser, and presses the confirmation page's button; returns the
   * authorization server's URL the gateway sent the browser to. Throws, with the page, when any step is refused.
   */
  async startConnect (link: string | URL, proof: BrowserProofStep): Promise<URL> {
    const confirmation = await this.proveAndOpen(link, proof)
    const [form] = confirmation.forms
    if (confirmation.status !== 200 || form === undefined || form.secret !== undefined) throw new Error(`expected the confirmation page, got ${confirmation.status}: ${confirmation.body.slice(0, 600)}`)
    const sent = await this.submit(form)
    if (sent.status !== 303 || sent.location === undefined) throw new Error(`the confirmation answered ${sent.status}: ${sent.body.slice(0, 600)}`)
    return sent.location
  }

  /** Opens `link` and proves who is at the browser; returns the page the gateway then shows (the confirmation, or a refusal). */
  async proveAndOpen (link: string | URL, proof: BrowserProofStep): Promise<Page> {
    let page = await this.get(link)
    const origin = page.url.origin
    for (let step = 0; step < MAX_STEPS; step++) {
      if (page.status >= 300 && page.status < 400 && page.location !== undefined) {
        if (plain(page.location).origin !== origin) {
          // The identity provider's sign-in: the user signs in there, and the browser comes back to the gateway.
          if (!('idpLogin' in proof)) throw new Error(`the gateway sent an API-key principal's browser to ${page.location.origin}`)
          page = await this.get(await consent(page.location, { login: proof.idpLogin }))
          continue
        }
        page = await this.get(page.location)
        continue
      }
      const keyForm = page.forms.find(f => f.secret !== undefined)
      if (keyForm !== undefined && 'apiKey' in proof) {
        page = await this.submit(keyForm, { [keyForm.secret ?? 'key']: proof.apiKey })
        continue
      }
      const idpForm = page.forms.find(f => f.action.pathname === '/connect/signin')
      if (idpForm !== undefined && 'idpLogin' in proof) {
        page = await this.submit(idpForm)
        continue
      }
      return page
    }
    throw new Error(`no page to stop at after ${MAX_STEPS} steps`)
  }

  /** Loads the authorization server's redirect back to the gateway (its callback) in this browser. */
  async callback (callbackUrl: string | URL): Promise<CallbackResult> {
    const page = await this.get(callbackUrl)
    return { status: page.status, body: page.body, headers: page.headers }
  }
}

/**
 * The whole connect flow as a user's browser runs it (test/helpers/gateway-browser.ts): opens `connectUrl`, proves
 * who is at the browser (`proof`: an API key typed into the gateway's form, or a sign-in at the identity provider),
 * confirms on the gateway's page, consents at the authorization server as `login`, then loads the callback in the
 * same browser.
 */
export async function connectAsBrowser (
  connectUrl: string | URL,
  options: ConsentOptions & { proof: BrowserProofStep, browser?: GatewayBrowser }
): Promise<CallbackResult & { readonly callbackUrl: URL }> {
  const browser = options.browser ?? new GatewayBrowser()
  const authorize = await browser.startConnect(connectUrl, options.proof)
  const callbackUrl = await consent(authorize, options)
  return { ...await browser.callback(callbackUrl), callbackUrl }
}
