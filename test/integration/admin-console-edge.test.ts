import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { ADMIN_TOKEN, rawRequest, signIn, startConsoleGateway } from '../helpers/admin-console.ts'
import { metricValue } from '../helpers/start-gateway.ts'

const BEARER = { authorization: `Bearer ${ADMIN_TOKEN}` }
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

async function login (base: string, token: string): Promise<Response> {
  return await fetch(`${base}/admin/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) })
}

async function adminMetrics (base: string): Promise<string> {
  return await (await fetch(`${base}/metrics`, { headers: BEARER })).text()
}

describe('console sign-in', () => {
  it('exchanges the admin token for an HttpOnly, SameSite=Strict cookie and a csrf value', async (t) => {
    const { base } = await startConsoleGateway(t)
    const before = Date.now()
    const res = await login(base, ADMIN_TOKEN)
    assert.equal(res.status, 200)
    const body = await res.json() as { csrf: string, expiresAt: number }
    assert.equal(typeof body.csrf, 'string')
    assert.ok(body.csrf.length >= 32)
    assert.ok(body.expiresAt >= before + 8 * 3600_000 && body.expiresAt <= Date.now() + 8 * 3600_000, 'admin.console.sessionTtlMs (8 h by default)')
    const setCookie = res.headers.get('set-cookie') ?? ''
    const [pair, ...attributes] = setCookie.split(';').map(s => s.trim())
    assert.match(pair ?? '', /^switchboard_console=[A-Za-z0-9_-]{43}$/)
    assert.ok(!setCookie.includes(ADMIN_TOKEN))
    assert.ok(!setCookie.includes(body.csrf))
    assert.deepEqual(attributes.sort(), ['HttpOnly', 'Max-Age=28800', 'Path=/', 'SameSite=Strict'])
    const text = await adminMetrics(base)
    assert.equal(metricValue(text, 'switchboard_console_logins_total', { outcome: 'ok' }), 1)
    assert.equal(metricValue(text, 'switchboard_console_sign_ins'), 1)
  })

  it('refuses a wrong token with 401, and after ten failures from one address a wrong one with 429; the right token still signs in', async (t) => {
    const { base } = await startConsoleGateway(t)
    for (const token of ['', 'wrong-token-0123456789']) {
      const res = await login(base, token)
      assert.equal(res.status, 401)
      assert.equal((await res.json() as { error: string }).error, 'unauthorized')
      assert.equal(res.headers.get('set-cookie'), null)
    }
    const noToken = await fetch(`${base}/admin/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    assert.equal(noToken.status, 401)
    for (let i = 3; i < 10; i++) assert.equal((await login(base, `wrong-${i}`)).status, 401, `failure ${i + 1}`)
    const throttled = await login(base, 'wrong-again')
    assert.equal(throttled.status, 429)
    assert.ok(Number(throttled.headers.get('retry-after')) > 0)
    const right = await login(base, ADMIN_TOKEN)
    assert.equal(right.status, 200, 'another process on the address cannot keep the operator out')
    assert.match(right.headers.get('set-cookie') ?? '', /^switchboard_console=/)
    const text = await adminMetrics(base)
    assert.equal(metricValue(text, 'switchboard_console_logins_total', { outcome: 'refused' }), 10)
    assert.equal(metricValue(text, 'switchboard_console_logins_total', { outcome: 'throttled' }), 1)
    assert.equal(metricValue(text, 'switchboard_console_logins_total', { outcome: 'ok' }), 1)
    assert.equal(metricValue(text, 'switchboard_admin_throttled_total', { via: 'login' }), 1)
  })

  it('the cookie reads the admin API; a state change needs the csrf header as well', async (t) => {
    const { base } = await startConsoleGateway(t)
    const session = await signIn(base)
    const cookie = { cookie: session.cookie }
    const upstreams = await fetch(`${base}/admin/upstreams`, { headers: cookie })
    assert.equal(upstreams.status, 200)
    assert.deepEqual((await upstreams.json() as { upstreams: Array<{ name: string }> }).upstreams.map(u => u.name), ['web'])
    assert.equal((await fetch(`${base}/metrics`, { headers: cookie })).status, 200)
    const again = await fetch(`${base}/admin/session`, { headers: cookie })
    assert.equal(again.status, 200)
    assert.deepEqual(await again.json(), { csrf: session.csrf, expiresAt: session.expiresAt })

    const reconnect = `${base}/admin/upstreams/web/reconnect`
    for (const headers of [cookie, { ...cookie, 'x-switchboard-csrf': 'not-the-csrf-value' }, { ...cookie, 'x-switchboard-csrf': '' }]) {
      const refused = await fetch(reconnect, { method: 'POST', headers })
      assert.equal(refused.status, 403)
      assert.equal((await refused.json() as { error: string }).error, 'csrf')
    }
    const other = await signIn(base)
    assert.equal((await fetch(reconnect, { method: 'POST', headers: { ...cookie, 'x-switchboard-csrf': other.csrf } })).status, 403, 'another sign-in\'s csrf value')
    const accepted = await fetch(reconnect, { method: 'POST', headers: { ...cookie, 'x-switchboard-csrf': session.csrf } })
    assert.equal(accepted.status, 202)
    assert.equal((await fetch(reconnect, { method: 'POST', headers: BEARER })).status, 202, 'the bearer token needs no csrf')
  })

  it('without the token or a cookie: 401 everywhere under /admin, unknown paths included, and no session', async (t) => {
    const { base } = await startConsoleGateway(t)
    for (const path of ['/admin/upstreams', '/admin/events', '/admin/nothing-here', '/metrics', '/nothing-here', '/admin/session']) {
      const res = await fetch(`${base}${path}`, { headers: { cookie: 'switchboard_console=made-up-value' } })
      assert.equal(res.status, 401, path)
    }
    const session = await signIn(base)
    assert.equal((await fetch(`${base}/admin/nothing-here`, { headers: { cookie: session.cookie } })).status, 404)
  })

  it('logout (with csrf) ends the sign-in and clears the cookie', async (t) => {
    const { base } = await startConsoleGateway(t)
    const session = await signIn(base)
    const cookie = { cookie: session.cookie }
    assert.equal((await fetch(`${base}/admin/logout`, { method: 'POST', headers: cookie })).status, 403, 'no csrf')
    assert.equal((await fetch(`${base}/admin/upstreams`, { headers: cookie })).status, 200, 'still signed in')
    const out = await fetch(`${base}/admin/logout`, { method: 'POST', headers: { ...cookie, 'x-switchboard-csrf': session.csrf } })
    assert.equal(out.status, 204)
    assert.match(out.headers.get('set-cookie') ?? '', /^switchboard_console=; HttpOnly; SameSite=Strict; Path=\/; Max-Age=0$/)
    assert.equal((await fetch(`${base}/admin/upstreams`, { headers: cookie })).status, 401)
    assert.equal((await fetch(`${base}/admin/session`, { headers: cookie })).status, 401)
    assert.equal(metricValue(await adminMetrics(base), 'switchboard_console_sign_ins'), 0)
  })
})

describe('the wrong-token throttle of the admin listener', () => {
  const WRONG = { authorization: 'Bearer wrong-admin-token-0123456789' }

  /** Retry-After in seconds, checked to be a whole number within the 30 s cap. */
  function retryAfterS (res: Response): number {
    const value = Number(res.headers.get('retry-after'))
    assert.ok(Number.isInteger(value) && value >= 1 && value <= 30, `Retry-After ${String(res.headers.get('retry-after'))}`)
    return value
  }

  it('answers wrong bearer tokens 429 with Retry-After past ten failures, and still takes the right token from that address', async (t) => {
    const { base } = await startConsoleGateway(t)
    const statuses: number[] = []
    for (let i = 0; i < 15; i++) {
      const res = await fetch(`${base}/admin/upstreams`, { headers: WRONG })
      statuses.push(res.status)
      if (res.status === 429) {
        retryAfterS(res)
        assert.equal((await res.json() as { error: string }).error, 'too_many_requests')
      } else {
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="switchboard-admin"')
        await res.arrayBuffer()
      }
    }
    assert.deepEqual(statuses.slice(0, 10), Array(10).fill(401), 'ten free failures')
    assert.ok(statuses.slice(10).includes(429), `then held back: ${statuses.join(' ')}`)
    for (const path of ['/admin/upstreams', '/metrics']) {
      assert.equal((await fetch(`${base}${path}`, { headers: BEARER })).status, 200, `the right token on ${path} while the address is held back`)
    }
    const stillHeld = await fetch(`${base}/nothing-here`, { headers: WRONG })
    assert.equal(stillHeld.status, 429, 'the right token cleared nothing for the wrong ones')
    retryAfterS(stillHeld)
    assert.equal((await login(base, ADMIN_TOKEN)).status, 200, 'the console sign-in too')
    const text = await adminMetrics(base)
    const held = statuses.filter(s => s === 429).length + 1
    assert.equal(metricValue(text, 'switchboard_admin_throttled_total', { via: 'bearer' }), held)
    assert.equal(metricValue(text, 'switchboard_admin_throttled_total', { via: 'login' }), 0)
  })

  it('counts wrong console sign-ins and wrong bearer tokens together', async (t) => {
    const { base } = await startConsoleGateway(t)
    for (let i = 0; i < 5; i++) {
      assert.equal((await login(base, `wrong-${i}`)).status, 401)
      assert.equal((await fetch(`${base}/admin/upstreams`, { headers: WRONG })).status, 401)
    }
    // Each kind alone is five, below the ten free failures: a 429 now comes from the shared count.
    const after: Array<[string, number]> = []
    for (let i = 0; i < 3; i++) {
      const bearer = await fetch(`${base}/admin/upstreams`, { headers: WRONG })
      after.push(['bearer', bearer.status])
      if (bearer.status === 429) retryAfterS(bearer)
      const signIn = await login(base, `wrong-again-${i}`)
      after.push(['login', signIn.status])
      if (signIn.status === 429) retryAfterS(signIn)
    }
    assert.ok(after.some(([via, status]) => via === 'bearer' && status === 429), JSON.stringify(after))
    assert.ok(after.some(([via, status]) => via === 'login' && status === 429), JSON.stringify(after))
    assert.equal((await fetch(`${base}/admin/upstreams`, { headers: BEARER })).status, 200)
  })
})

describe('the admin listener\'s edge', () => {
  it('refuses a foreign Host or Origin on every route, signed in or not; its own, loopback and allowed ones pass', async (t) => {
    const { base, port } = await startConsoleGateway(t, { allowedHosts: ['admin.example'], allowedOrigins: ['https://console.example'] })
    const session = await signIn(base)
    const own = `127.0.0.1:${port}`
    const auth = { ...BEARER, cookie: session.cookie }
    for (const path of ['/', '/console/index.html', '/admin/upstreams', '/admin/session', '/metrics', '/nothing-here']) {
      for (const host of ['evil.example', `evil.example:${port}`, `${own}@evil.example`]) {
        const refused = await rawRequest(port, 'GET', path, { host, ...auth })
        assert.equal(refused.status, 403, `${path} with Host ${host}`)
        assert.match(refused.body, /Forbidden: Host/)
        assert.ok(!refused.body.includes('web'), 'no upstream name')
      }
      const foreign = await rawRequest(port, 'GET', path, { host: own, origin: 'https://evil.example', ...auth })
      assert.equal(foreign.status, 403, `${path} with a foreign Origin`)
      assert.match(foreign.body, /Forbidden: Origin/)
      for (const [host, origin] of [[own, `http://${own}`], ['localhost', 'http://localhost:3000'], ['admin.example', 'https://console.example'], [`admin.example:${port}`, `http://admin.example:${port}`]]) {
        const ok = await rawRequest(port, 'GET', path, { host: host as string, origin: origin as string, ...auth })
        assert.notEqual(ok.status, 403, `${path} with Host ${host} and Origin ${origin}`)
      }
    }
    const login = await rawRequest(port, 'POST', '/admin/login', { host: own, origin: 'https://evil.example', 'content-type': 'application/json' }, JSON.stringify({ token: ADMIN_TOKEN }))
    assert.equal(login.status, 403, 'a foreign page cannot sign in')
    assert.equal(login.headers['set-cookie'], undefined)
  })

  it('puts the CSP, nosniff, no-referrer and no-store on pages, assets, API answers and refusals', async (t) => {
    const { base, port } = await startConsoleGateway(t)
    const answers = {
      '/': await fetch(`${base}/`),
      '/console/app.js': await fetch(`${base}/console/app.js`),
      '/console/vendor/htm-preact.js': await fetch(`${base}/console/vendor/htm-preact.js`),
      '/admin/upstreams': await fetch(`${base}/admin/upstreams`, { headers: BEARER }),
      unauthorized: await fetch(`${base}/admin/upstreams`),
      refused: await fetch(`${base}/admin/upstreams`, { headers: { ...BEARER, origin: 'https://evil.example' } })
    }
    for (const [what, res] of Object.entries(answers)) {
      assert.equal(res.headers.get('content-security-policy'), CSP, what)
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what)
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer', what)
      await res.arrayBuffer()
    }
    for (const what of ['/', '/admin/upstreams', 'unauthorized', 'refused'] as const) assert.equal(answers[what].headers.get('cache-control'), 'no-store', what)
    assert.equal(answers['/'].status, 200)
    assert.match(answers['/'].headers.get('content-type') ?? '', /^text\/html/)
    const vendor = answers['/console/vendor/htm-preact.js']
    assert.equal(vendor.status, 200)
    assert.match(vendor.headers.get('content-type') ?? '', /^text\/javascript/)
    const vendorText = await (await fetch(`${base}/console/vendor/htm-preact.js`)).text()
    assert.match(vendorText, /export\s*\{/, 'an ES module')
    assert.doesNotMatch(vendorText, /from\s*["'][^./]/, 'no bare imports')
    const page = await rawRequest(port, 'GET', '/', { host: `127.0.0.1:${port}` })
    assert.match(page.body, /src="\/console\/app\.js"/)
    assert.doesNotMatch(page.body, /<script>|<style>|style=/, 'no inline script or style')
  })

  it('serves only the allowlisted console files: traversal, encoded or not, is a 404', async (t) => {
    const { port } = await startConsoleGateway(t)
    const host = { host: `127.0.0.1:${port}` }
    assert.equal((await rawRequest(port, 'GET', '/console/index.html', host)).status, 200)
    for (const path of ['/console/../package.json', '/console/%2e%2e/package.json', '/console/%2E%2E%2Fpackage.json', '/console/..%2fpackage.json',
      '/console/vendor/../../package.json', '/console//etc/passwd', '/console/%2fetc%2fpasswd', '/console/../../../../etc/passwd', '/console/.hidden', '/console/']) {
      const res = await rawRequest(port, 'GET', path, host)
      assert.ok(res.status === 404 || res.status === 400, `${path}: ${res.status}`)
      assert.ok(!res.body.includes('"name": "switchboard"') && !res.body.includes('root:'), `${path} leaked a file`)
    }
  })

  it('admin.console.enabled: false serves no page, no sign-in, and takes no cookie; the bearer API stays', async (t) => {
    const { base } = await startConsoleGateway(t, { console: { enabled: false } })
    assert.equal((await fetch(`${base}/`, { headers: BEARER })).status, 404)
    assert.equal((await fetch(`${base}/`)).status, 401)
    assert.equal((await fetch(`${base}/console/vendor/htm-preact.js`, { headers: BEARER })).status, 404)
    assert.equal((await login(base, ADMIN_TOKEN)).status, 401, 'no login route: the unauthenticated 404 is a 401')
    assert.equal((await fetch(`${base}/admin/login`, { method: 'POST', headers: { ...BEARER, 'content-type': 'application/json' }, body: JSON.stringify({ token: ADMIN_TOKEN }) })).status, 404)
    assert.equal((await fetch(`${base}/admin/session`, { headers: BEARER })).status, 404)
    assert.equal((await fetch(`${base}/admin/upstreams`, { headers: BEARER })).status, 200)
    const page = await fetch(`${base}/`, { headers: BEARER })
    assert.equal(page.headers.get('content-security-policy'), CSP)
  })
})
