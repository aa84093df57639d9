import { html, render, useEffect, useState } from '/console/vendor/htm-preact.js'
import { ApiError, get, post, setCsrf, whenSignedOut } from './api.js'
import { startEvents, stopEvents, useLink, useStatus } from './events.js'
import { Notice } from './ui.js'
import { OverviewPage } from './page-overview.js'
import { CatalogPage } from './page-catalog.js'
import { TrustPage } from './page-trust.js'
import { SessionsPage } from './page-sessions.js'
import { LivePage } from './page-live.js'
import { ConfigPage } from './page-config.js'
import { ApprovalsPage } from './page-approvals.js'
import { ConnectionsPage } from './page-connections.js'

const PAGES = [
  { id: 'overview', label: 'Overview', view: OverviewPage },
  { id: 'catalog', label: 'Catalog', view: CatalogPage },
  { id: 'trust', label: 'Trust', view: TrustPage },
  { id: 'sessions', label: 'Sessions', view: SessionsPage },
  { id: 'live', label: 'Live', view: LivePage },
  { id: 'config', label: 'Config', view: ConfigPage },
  { id: 'approvals', label: 'Approvals', view: ApprovalsPage },
  { id: 'connections', label: 'Connections', view: ConnectionsPage }
]

function currentRoute () {
  const id = location.hash.replace(/^#\/?/, '').split('?')[0]
  return PAGES.find(p => p.id === id) ?? PAGES[0]
}

function useRoute () {
  const [route, setRoute] = useState(currentRoute())
  useEffect(() => {
    const follow = () => setRoute(currentRoute())
    addEventListener('hashchange', follow)
    return () => removeEventListener('hashchange', follow)
  }, [])
  return route
}

function SignIn ({ onSignedIn, expired }) {
  const [token, setToken] = useState('')
  const [error, setError] = useState(null)
  const [busy, setBusy] = useState(false)
  useEffect(() => { document.title = 'Sign in · Switchboard' }, [])
  const submit = async (event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const signed = await post('/admin/login', { token })
      setToken('')
      onSignedIn(signed)
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setError(new Error('That admin token is not valid.'))
      else if (err instanceof ApiError && err.status === 429) setError(new Error('That admin token is not valid, and this address has sent too many wrong ones: the next wrong token waits longer (at most 30 s). The right token always signs in.'))
      else setError(err)
    } finally {
      setBusy(false)
    }
  }
  return html`
    <main class="signin" id="main">
      <form class="card" onSubmit=${submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Switchboard console</h1>
        <p class="muted">Sign in with the gateway's admin token (<code>admin.token</code>). It is exchanged for a session cookie and not kept by this page.</p>
        ${expired ? html`<p class="notice" role="status">Your sign-in ended; sign in again.</p>` : null}
        <label for="token">Admin token</label>
        <input id="token" name="token" type="password" autocomplete="current-password" required
          value=${token} onInput=${e => setToken(e.currentTarget.value)} autofocus />
        <button type="submit" class="primary" disabled=${busy || token === ''}>Sign in</button>
        <${Notice} error=${error} />
      </form>
    </main>`
}

function Shell ({ route, onSignOut }) {
  const status = useStatus()
  const link = useLink()
  const pending = status?.pendingApprovals ?? 0
  const Page = route.view
  return html`
    <a class="skip" href="#main" onClick=${e => { e.preventDefault(); document.getElementById('main')?.focus() }}>Skip to content</a>
    <header class="top">
      <span class="brand">Switchboard</span>
      <nav aria-label="Console pages">
        <ul>
          ${PAGES.map(p => html`
            <li><a href=${`#/${p.id}`} aria-current=${p.id === route.id ? 'page' : undefined}>
              ${p.label}${p.id === 'approvals' && pending > 0 ? html` <span class="count" aria-label=${`${pending} waiting`}>${pending}</span>` : null}
            </a></li>`)}
        </ul>
      </nav>
      <span class=${`link ${link ? 'up' : 'down'}`} role="status" title="The live event stream from the gateway">${link ? 'live' : 'offline'}</span>
      <button type="button" onClick=${onSignOut}>Sign out</button>
    </header>
    <main id="main" tabindex="-1">
      <${Page} key=${route.id} />
    </main>`
}

function App () {
  const [signedIn, setSignedIn] = useState(null)
  const [expired, setExpired] = useState(false)
  const route = useRoute()

  // The stream was refused: a sign-in that ended shows the sign-in form; otherwise it is retried.
  const streamRefused = () => { get('/admin/session').catch(err => { if (err instanceof ApiError && err.status === 401) leave(true) }) }
  const enter = (signed) => {
    setCsrf(signed.csrf)
    startEvents(streamRefused)
    setExpired(false)
    setSignedIn(signed)
  }
  const leave = (wasExpired) => {
    setCsrf(null)
    stopEvents()
    setExpired(wasExpired)
    setSignedIn(false)
  }

  useEffect(() => {
    whenSignedOut(() => leave(true))
    get('/admin/session').then(enter, () => setSignedIn(false))
  }, [])

  const signOut = async () => {
    try { await post('/admin/logout') } catch { /* the cookie may already be gone */ }
    leave(false)
  }

  if (signedIn === null) return html`<p class="boot">Loading…</p>`
  if (signedIn === false) return html`<${SignIn} onSignedIn=${enter} expired=${expired} />`
  return html`<${Shell} route=${route} onSignOut=${signOut} />`
}

render(html`<${App} />`, document.getElementById('app'))
