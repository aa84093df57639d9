import { randomBytes, randomUUID } from 'node:crypto'
import type { Principal } from '../../src/auth/principal.ts'
import type { CompletedConnect, ConnectFlows, ConnectLink, LinkStatus, ValidLink } from '../../src/credentials/connect-flows.ts'
import type { CredentialRequest } from '../../src/credentials/credential-provider.ts'
import { type GrantSummary, principalKey } from '../../src/credentials/vault/token-vault.ts'
import { SwitchboardError } from '../../src/errors.ts'
import { GatewayBrowser } from './gateway-browser.ts'

/** Where the double's "authorization server" lives: never fetched, the test plays it. */
export const AUTHORIZE_AT = 'https://as.invalid/authorize'
/** The only code the double's callback accepts. */
export const GOOD_CODE = 'the-good-code'

interface Started { upstream: string, principal: Principal, elicitationId?: string | undefined, browser?: string }

/**
 * A ConnectFlows of the test's own (a double of the gateway's seam, not of OAuth): links and states
 * are random strings in maps, a grant is a summary the callback stores, and the test plays both
 * the browser and the authorization server. `base` is the gateway's URL, set once it listens.
 */
export class ConnectFlowsDouble implements ConnectFlows {
  base = 'http://127.0.0.1:0'
  readonly grants = new Map<string, GrantSummary>()
  readonly links = new Map<string, Started>()
  readonly states = new Map<string, Started>()
  /** Links spent, by elicitation id. */
  readonly spent = new Set<string>()
  readonly disconnects: string[] = []
  /** Set: authorizationUrl fails, as it does when the authorization server cannot be reached. */
  authorizeFails = false
  readonly #upstreams: ReadonlySet<string>
  #waiters: Array<{ key: string, resolve: () => void }> = []

  constructor (upstreams: readonly string[]) {
    this.#upstreams = new Set(upstreams)
  }

  offers (upstream: string): boolean { return this.#upstreams.has(upstream) }

  async linkFor (upstream: string, principal: Principal): Promise<ConnectLink> {
    const link = randomBytes(16).toString('base64url')
    const elicitationId = randomUUID()
    this.links.set(link, { upstream, principal, elicitationId })
    return { url: `${this.base}/connect/${upstream}?link=${link}`, elicitationId }
  }

  async readLink (upstream: string, link: string): Promise<LinkStatus> {
    const started = this.links.get(link)
    if (started?.upstream !== upstream || started.elicitationId === undefined) return { status: 'invalid' }
    if (this.spent.has(started.elicitationId)) return { status: 'used' }
    return { status: 'valid', upstream, principal: started.principal, elicitationId: started.elicitationId, expiresAt: Date.now() + 60_000 }
  }

  async spendLink (link: ValidLink): Promise<boolean> {
    if (this.spent.has(link.elicitationId)) return false
    this.spent.add(link.elicitationId)
    return true
  }

  async authorizationUrl (upstream: string, principal: Principal, browser: string, elicitationId?: string): Promise<URL> {
    if (this.authorizeFails) throw new Error('authorization server metadata unreachable')
    const state = randomBytes(16).toString('base64url')
    this.states.set(state, { upstream, principal, elicitationId, browser })
    const url = new URL(AUTHORIZE_AT)
    url.searchParams.set('state', state)
    url.searchParams.set('client_id', 'switchboard')
    return url
  }

  async complete (query: URLSearchParams, browser: string | undefined): Promise<CompletedConnect> {
    const state = query.get('state') ?? ''
    const started = this.states.get(state)
    const error = query.get('error')
    if (started === undefined || (error === null && query.get('code') !== GOOD_CODE)) throw new SwitchboardError('SB_ERR_CONNECT_STATE')
    this.states.delete(state)
    if (started.browser !== browser) throw new SwitchboardError('SB_ERR_CONNECT_IDENTITY', undefined, { details: { upstream: started.upstream } })
    if (error !== null) throw new SwitchboardError('SB_ERR_CONNECT_DENIED', undefined, { details: { upstream: started.upstream, consentRefused: error === 'access_denied' } })
    this.grant(started.upstream, started.principal)
    return started
  }

  async connected (upstream: string, principal: Principal, signal: AbortSignal): Promise<void> {
    const key = keyOf(upstream, principalKey(principal))
    if (this.grants.has(key)) return
    await new Promise<void>((resolve, reject) => {
      const waiter = { key, resolve: () => { signal.removeEventListener('abort', onAbort); resolve() } }
      const onAbort = (): void => {
        this.#waiters = this.#waiters.filter(w => w !== waiter)
        reject(signal.reason)
      }
      if (signal.aborted) { onAbort(); return }
      signal.addEventListener('abort', onAbort, { once: true })
      this.#waiters.push(waiter)
    })
  }

  async disconnect (upstream: string, key: string): Promise<boolean> {
    this.disconnects.push(`${upstream} ${key}`)
    return this.grants.delete(keyOf(upstream, key))
  }

  async list (key?: string): Promise<GrantSummary[]> {
    return [...this.grants.values()].filter(g => key === undefined || g.key.principal === key)
  }

  /** What the gate asks of the upstream's provider: no grant yet. */
  readonly needsConnect = async (upstream: string, who: CredentialRequest): Promise<boolean> => !this.grants.has(keyOf(upstream, principalKey(who.principal)))

  /** Stores a grant (as the callback would) and wakes whoever waits for it. */
  grant (upstream: string, principal: Principal, extra: Partial<GrantSummary> = {}): void {
    const key = keyOf(upstream, principalKey(principal))
    this.grants.set(key, { key: { upstream, principal: principalKey(principal) }, type: 'oauth', scope: 'repo read:user', expiresAt: Date.UTC(2030, 0, 1), obtainedAt: Date.UTC(2026, 0, 1), refreshable: true, ...extra })
    const woken = this.#waiters.filter(w => w.key === key)
    this.#waiters = this.#waiters.filter(w => w.key !== key)
    for (const w of woken) w.resolve()
  }
}

function keyOf (upstream: string, principal: string): string {
  return `${upstream}\u0000${principal}`
}

/**
 * What a user's browser does with a connect link: opens it, proves who is at it by typing `apiKey` into the gateway's
 * form, confirms, consents (the test is the authorization server: it takes the state from the redirect), and loads
 * the redirect back to the gateway's callback in the same browser. Returns the callback's page.
 */
export async function browseConnect (link: string, apiKey: string, code = GOOD_CODE): Promise<{ status: number, page: string }> {
  const browser = new GatewayBrowser()
  const authorize = await browser.startConnect(link, { apiKey })
  const callback = new URL('/oauth/callback', link)
  callback.searchParams.set('code', code)
  callback.searchParams.set('state', authorize.searchParams.get('state') ?? '')
  const res = await browser.callback(callback)
  return { status: res.status, page: res.body }
}
