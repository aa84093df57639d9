import { test } from 'node:test'
import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { Page, Request } from 'playwright-core'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { CODE_CLIENT, startAuthorizationServer, type AuthorizationServer } from '../fixtures/authorization-server.ts'
import { startProtectedUpstream } from '../fixtures/protected-upstream.ts'
import { chromiumOrSkip, launchChromium } from '../helpers/chromium.ts'
import { freePort } from '../helpers/free-port.ts'
import { codeFlow } from '../helpers/oauth-flows.ts'
import { startGateway, waitReady, type RunningGateway } from '../helpers/start-gateway.ts'

// The connect flow of per-user OAuth (issue 37) in a real Chromium, for what the scripted browser of
// test/integration/connect-proof.test.ts cannot see: the pages rendering under their CSP, their forms
// posting, a 303 from a form POST to another origin being followed, and the SameSite=Lax cookies
// coming back on the authorization server's cross-site redirect. Cross-site for real: the gateway's
// publicUrl says `localhost` while both authorization servers are on 127.0.0.1, so the browser sees
// two sites (same-site ignores ports, so 127.0.0.1 for all three would be one site).

const KEYS = { alice: 'alice-key-0123456789abcdef', bob: 'bob-key-0123456789abcdefgh', mallory: 'mallory-key-0123456789abcd' }
const AUDIENCE = 'https://gateway.test/mcp'
const BROWSER_CLIENT = { clientId: 'switchboard-browser', clientSecret: 'switchboard-browser-secret' }
const IDP_REDIRECT = 'http://127.0.0.1:9/agent-callback'
/** Every wait on the page: long enough for a loaded machine, short enough that a stuck flow fails this test, not the run. */
const WAIT_MS = 15_000

interface World { as: AuthorizationServer, idp: AuthorizationServer, gw: RunningGateway, publicUrl: string }

async function world (t: TestContext): Promise<World> {
  const as = await startAuthorizationServer(t)
  const idp = await startAuthorizationServer(t, { redirectUris: [IDP_REDIRECT] })
  const upstream = await startProtectedUpstream(t, { authorizationServer: { issuer: as.issuer } })
  const port = await freePort()
  // Chromium resolves localhost to loopback itself; the gateway still listens on 127.0.0.1 only.
  const publicUrl = `http://localhost:${port}`
  as.registerClient({ client_id: CODE_CLIENT.clientId, client_secret: CODE_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/oauth/callback`], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] })
  idp.registerClient({ client_id: BROWSER_CLIENT.clientId, client_secret: BROWSER_CLIENT.clientSecret, redirect_uris: [`${publicUrl}/connect/signin/callback`], grant_types: ['authorization_code'], response_types: ['code'] })
  const gw = await startGateway(t, JSON.stringify({
    listen: { host: '127.0.0.1', port },
    http: { publicUrl },
    auth: {
      apiKeys: Object.entries(KEYS).map(([id, key]) => ({ id, key })),
      jwt: { issuer: idp.issuer, audience: AUDIENCE, jwksUri: `${idp.url}/jwks`, browser: BROWSER_CLIENT }
    },
    tokens: { encryptionKey: randomBytes(32).toString('base64') },
    upstreams: [{ name: 'prot', transport: 'streamable-http', url: upstream.mcpUrl, auth: { type: 'oauth', clientId: CODE_CLIENT.clientId, clientSecret: CODE_CLIENT.clientSecret } }]
  }))
  await waitReady(gw)
  return { as, idp, gw, publicUrl }
}

async function agent (t: TestContext, gw: RunningGateway, bearer: string): Promise<Client> {
  const c = new Client({ name: 'agent', version: '1.0.0' })
  await c.connect(new StreamableHTTPClientTransport(new URL(gw.url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }))
  t.after(async () => { await c.close().catch(() => {}) })
  return c
}

interface CallOutcome { sub?: unknown, code?: number, message?: string, url?: string }

/** whoami through the gateway: the upstream account the call ran as, or the error (and the connect link of a -32042). */
async function whoami (c: Client): Promise<CallOutcome> {
  try {
    const result = await c.callTool({ name: 'prot__whoami', arguments: {} }) as { structuredContent?: { sub?: unknown } }
    return { sub: result.structuredContent?.sub }
  } catch (err: unknown) {
    const e = err as { code?: number, message?: string, data?: { elicitations?: Array<{ url?: string }> } }
    return { code: e.code, message: e.message, url: e.data?.elicitations?.[0]?.url }
  }
}

async function linkOf (c: Client, publicUrl: string): Promise<string> {
  const outcome = await whoami(c)
  assert.equal(outcome.code, -32042, JSON.stringify(outcome))
  const link = String(outcome.url)
  assert.ok(link.startsWith(`${publicUrl}/connect/prot?link=`), link)
  return link
}

/** What the browser did, kept as data: each request (with the headers it really sent), each answer, and every error it reported. */
interface Trace { requests: Request[], answers: string[], problems: string[] }

function trace (page: Page): Trace {
  const out: Trace = { requests: [], answers: [], problems: [] }
  page.on('request', (request) => { out.requests.push(request) })
  page.on('response', (response) => { out.answers.push(`${response.status()} ${response.request().method()} ${response.url()}`) })
  page.on('requestfailed', (request) => { out.problems.push(`request failed: ${request.method()} ${request.url()}: ${request.failure()?.errorText ?? ''}`) })
  page.on('pageerror', (err) => { out.problems.push(`page error: ${err.message}`) })
  page.on('console', (message) => {
    // Chromium asks every origin for /favicon.ico on its own; none of these servers has one.
    if (message.type() !== 'error' || message.location().url.endsWith('/favicon.ico')) return
    out.problems.push(`console error: ${message.text()} (${message.location().url})`)
  })
  return out
}

/**
 * Presses the page's button `name`; the form POST it sends to `path` must be answered 303 (the
 * browser is then sent on, to another origin too). Chromium sends what a browser sends (Origin, Sec-Fetch-*, the
 * cookies its SameSite rules allow), which the scripted browser does not.
 */
async function press (page: Page, name: string, path: string): Promise<void> {
  const [answer] = await Promise.all([
    page.waitForResponse(r => r.request().method() === 'POST' && new URL(r.url()).pathname === path, { timeout: WAIT_MS }),
    page.getByRole('button', { name }).click()
  ])
  const sent = await answer.request().allHeaders()
  const body = answer.status() === 303 ? '' : await answer.text().catch(() => '')
  // The page's own Origin must come along: under `referrer-policy: no-referrer` Chromium sends
  // `Origin: null` with the form, which the edge guard refuses (403), as this test first found.
  assert.notEqual(sent.origin, 'null')
  assert.equal(answer.status(), 303, `POST ${path} answered ${answer.status()} ${body.slice(0, 300)}; Chromium sent Origin: ${sent.origin ?? '(none)'}`)
}

/** The page's h1, once it says `name`; the trace is in the failure. */
async function heading (page: Page, name: string | RegExp, seen: Trace): Promise<void> {
  try {
    await page.getByRole('heading', { level: 1, name }).waitFor({ timeout: WAIT_MS })
  } catch (err: unknown) {
    const body = await page.locator('body').innerText({ timeout: 1000 }).catch(() => '(no body)')
    throw new Error(`no heading ${String(name)} at ${page.url()}: ${body.slice(0, 400)}\n${seen.answers.join('\n')}\n${seen.problems.join('\n')}`, { cause: err })
  }
}

/** The key form: the API key typed into its password input, and its button pressed. */
async function proveWithKey (page: Page, key: string, seen: Trace): Promise<void> {
  await heading(page, 'Prove it is you', seen)
  await page.getByLabel('API key').fill(key)
  await press(page, 'Prove it', '/connect/signin/key')
}

/**
 * The browser's arrival at `url` (a redirect from `from`'s origin, a site other than the gateway's):
 * the request Chromium really sent, which must carry the cookie `cookie` that SameSite=Lax lets
 * through on a cross-site top-level GET.
 */
async function arrivedWith (seen: Trace, url: string, from: string, cookie: string): Promise<void> {
  const arrival = seen.requests.find(r => r.url().startsWith(url))
  assert.ok(arrival !== undefined, `the browser was sent to ${url}`)
  assert.equal(new URL(arrival.redirectedFrom()?.url() ?? 'about:blank').origin, new URL(from).origin, `redirected there by ${from}`)
  const sent = await arrival.allHeaders()
  assert.equal(sent['sec-fetch-site'], 'cross-site', 'Chromium saw the redirect as cross-site')
  assert.match(sent.cookie ?? '', new RegExp(`(^|; )${cookie}=`), `${cookie} came back on the cross-site redirect`)
}

/** The test authorization server's pages (test/fixtures/authorization-interactions.ts): a login name, then Allow. */
async function signInAndAllow (page: Page, origin: string, login: string, seen: Trace): Promise<void> {
  try {
    await page.waitForURL(url => url.origin === origin && url.pathname.startsWith('/interaction/'), { timeout: WAIT_MS })
  } catch (err: unknown) {
    throw new Error(`not at ${origin}'s login page but at ${page.url()}\n${seen.answers.join('\n')}\n${seen.problems.join('\n')}`, { cause: err })
  }
  await page.locator('input[name="login"]').fill(login)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('button', { name: 'Allow' }).click({ timeout: WAIT_MS })
}

test('an API-key principal connects through its link in Chromium: key typed, button pressed, consent at the authorization server, connected; the link is then spent', { timeout: 120_000 }, async (t) => {
  if (!chromiumOrSkip(t)) return
  // First, so that it is closed first (t.after runs in order): a server closing under the browser's open connections waits for them.
  const { context, page } = await launchChromium(t)
  const seen = trace(page)
  const { as, gw, publicUrl } = await world(t)
  const alice = await agent(t, gw, KEYS.alice)
  const link = await linkOf(alice, publicUrl)

  const opened = await page.goto(link)
  assert.equal(opened?.status(), 200)
  assert.equal(opened?.headers()['content-security-policy'], "default-src 'none'; frame-ancestors 'none'")
  await proveWithKey(page, KEYS.alice, seen)

  await heading(page, 'Connect your account at prot for alice', seen)
  assert.equal(page.url(), link, 'the key form sent the browser back to the link')
  const cookies = (await context.cookies(`${publicUrl}/connect`)).filter(c => c.name === 'switchboard_connect')
  assert.equal(cookies.length, 1, 'the proof cookie is set')
  assert.equal(cookies[0]?.httpOnly, true)
  assert.equal(cookies[0]?.sameSite, 'Lax')
  assert.deepEqual((await context.cookies()).filter(c => c.name === 'switchboard_connect').map(c => c.path).sort(), ['/connect', '/connections', '/oauth/callback'])

  await press(page, 'Continue to prot', '/connect/prot')
  await signInAndAllow(page, new URL(as.url).origin, 'alice-gh', seen)
  await heading(page, 'Connected', seen)
  assert.match(await page.locator('body').innerText(), /Connected to prot\./)

  await arrivedWith(seen, `${publicUrl}/oauth/callback?`, as.url, 'switchboard_connect')

  assert.equal((await whoami(alice)).sub, 'alice-gh')

  const again = await page.goto(link)
  assert.equal(again?.status(), 400)
  await heading(page, 'Link already used', seen)
  assert.equal(await page.getByRole('button').count(), 0)
  // The one page that answered an error status is the spent link's (400): the pages' CSP blocked nothing.
  assert.deepEqual(seen.problems, [`console error: Failed to load resource: the server responded with a status of 400 (Bad Request) (${link})`])
})

test('phishing in a real browser: mallory\'s link opened in bob\'s Chromium, proven with bob\'s key, is not for him, offers nothing to press, and binds nothing', { timeout: 120_000 }, async (t) => {
  if (!chromiumOrSkip(t)) return
  const { page } = await launchChromium(t)
  const seen = trace(page)
  const { as, gw, publicUrl } = await world(t)
  const mallory = await agent(t, gw, KEYS.mallory)
  const link = await linkOf(mallory, publicUrl)

  await page.goto(link)
  await proveWithKey(page, KEYS.bob, seen)
  await heading(page, 'This link is not for you', seen)
  assert.match(await page.locator('body').innerText(), /signed in as bob\. Nothing was connected\./)
  assert.equal(await page.locator('form').count(), 0)
  assert.equal(await page.getByRole('button').count(), 0)
  assert.equal(seen.answers.filter(a => a.startsWith('403 GET ')).length, 1, seen.answers.join('\n'))

  assert.equal(seen.requests.some(r => r.url().startsWith(as.url)), false, 'bob\'s browser never reached the authorization server')
  assert.equal(as.accounts.size, 0)
  const after = await whoami(mallory)
  assert.equal(after.code, -32042, JSON.stringify(after))
  assert.deepEqual(seen.problems, [`console error: Failed to load resource: the server responded with a status of 403 (Forbidden) (${link})`])
})

test('a JWT principal connects in Chromium: sent to the company identity provider, signed in there, back to confirm, consent at the authorization server, connected', { timeout: 120_000 }, async (t) => {
  if (!chromiumOrSkip(t)) return
  const { page } = await launchChromium(t)
  const seen = trace(page)
  const { as, idp, gw, publicUrl } = await world(t)
  const token = (await codeFlow(idp, { login: 'carol', redirectUri: IDP_REDIRECT, resource: AUDIENCE })).access_token
  const carol = await agent(t, gw, token)
  const link = await linkOf(carol, publicUrl)

  await page.goto(link)
  await signInAndAllow(page, new URL(idp.url).origin, 'carol', seen)
  await heading(page, /^Connect your account at prot for /, seen)
  assert.equal(page.url(), link, 'the identity provider\'s sign-in came back to the link')
  await arrivedWith(seen, `${publicUrl}/connect/signin/callback?`, idp.url, 'switchboard_signin')

  await press(page, 'Continue to prot', '/connect/prot')
  await signInAndAllow(page, new URL(as.url).origin, 'carol-gh', seen)
  await heading(page, 'Connected', seen)
  await arrivedWith(seen, `${publicUrl}/oauth/callback?`, as.url, 'switchboard_connect')
  assert.equal((await whoami(carol)).sub, 'carol-gh')
  assert.deepEqual(seen.problems, [])
})
