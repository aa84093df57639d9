import { randomBytes } from 'node:crypto'
import type { TestContext } from 'node:test'
import pino from 'pino'
import type { Principal } from '../../../../src/auth/principal.ts'
import { parseConfig } from '../../../../src/config/load-config.ts'
import type { UpstreamConfig } from '../../../../src/config/schema.ts'
import type { AuthOutcome } from '../../../../src/credentials/auth-outcome.ts'
import type { CompletedConnect } from '../../../../src/credentials/connect-flows.ts'
import { createCredentialProviders, type CredentialServices } from '../../../../src/credentials/create-credential-providers.ts'
import { MemoryVault } from '../../../../src/credentials/vault/memory-vault.ts'
import { RedisVault } from '../../../../src/credentials/vault/redis-vault.ts'
import { Keyring } from '../../../../src/credentials/vault/sealed-record.ts'
import type { TokenVault, VaultRecords } from '../../../../src/credentials/vault/token-vault.ts'
import { consent } from '../../../helpers/consent.ts'

/** Nothing listens there: consent() stops at the redirect to it, the test hands its query to complete(). */
export const PUBLIC_URL = 'http://127.0.0.1:9'
export const REDIRECT_URI = `${PUBLIC_URL}/oauth/callback`

export const ALICE: Principal = Object.freeze({ id: 'alice', roles: Object.freeze([]) as readonly string[], via: 'jwt' })
export const BOB: Principal = Object.freeze({ id: 'bob', roles: Object.freeze([]) as readonly string[], via: 'jwt' })

export function newKey (): string {
  return randomBytes(32).toString('base64')
}

export interface Store { vault: TokenVault, records: VaultRecords }

export function memoryStore (t: Pick<TestContext, 'after'>, encryptionKey = newKey()): Store {
  const vault = new MemoryVault({ keyring: new Keyring({ encryptionKey }) })
  t.after(() => vault.close())
  return { vault, records: vault.records }
}

/** One replica's view of a shared Redis: its own client and lock owner, the same records. */
export async function redisStore (t: Pick<TestContext, 'after'>, url: string, encryptionKey: string): Promise<Store> {
  const vault = new RedisVault({ url, keyPrefix: 'sbtest', commandTimeoutMs: 1000, keyring: new Keyring({ encryptionKey }) })
  t.after(() => vault.close())
  await vault.connected(3000)
  return { vault, records: vault.records }
}

export function upstreamsOf (upstreams: readonly Record<string, unknown>[]): UpstreamConfig[] {
  return parseConfig(JSON.stringify({ upstreams }), {}).upstreams
}

export interface Replica {
  services: CredentialServices
  outcomes: Array<[string, string, AuthOutcome]>
  upstream: (name: string) => UpstreamConfig
}

/** One gateway replica's credential services over `store`, for `upstreams` (parsed as config). */
export function replica (store: Store, upstreams: readonly UpstreamConfig[], encryptionKey: string, publicUrl = PUBLIC_URL): Replica {
  const outcomes: Array<[string, string, AuthOutcome]> = []
  const byName = (name: string): UpstreamConfig | undefined => upstreams.find(u => u.name === name)
  const services = createCredentialProviders({
    ...store,
    publicUrl,
    tokens: { encryptionKey, previousKeys: [], store: 'auto' },
    upstreams: byName,
    log: pino({ level: 'silent' }),
    onOutcome: (upstream, type, outcome) => { outcomes.push([upstream, type, outcome]) }
  })
  return {
    services,
    outcomes,
    upstream: (name) => {
      const found = byName(name)
      if (found === undefined) throw new Error(`no upstream ${name}`)
      return found
    }
  }
}

/** The id of the proven browser these flows run in (the connect routes take it from the browser's proof cookie). */
export const BROWSER = 'browser-of-the-test'

/** The redirect the user's browser brings back after consenting as `login` to a connect `principal` started. */
export async function consentedCallback (services: CredentialServices, upstream: string, principal: Principal, login: string): Promise<URLSearchParams> {
  const link = await services.connectFlows.linkFor(upstream, principal)
  const linkToken = new URL(link.url).searchParams.get('link') ?? ''
  const holder = await services.connectFlows.readLink(upstream, linkToken)
  if (holder.status !== 'valid') throw new Error(`the connect link was not accepted: ${holder.status}`)
  if (!await services.connectFlows.spendLink(holder)) throw new Error('the connect link was already spent')
  const authorize = await services.connectFlows.authorizationUrl(upstream, holder.principal, BROWSER, holder.elicitationId)
  return (await consent(authorize, { login })).searchParams
}

/** linkFor → readLink → spendLink → authorizationUrl → consent as `login` → complete in the same browser. */
export async function connect (services: CredentialServices, upstream: string, principal: Principal, login: string): Promise<CompletedConnect> {
  return await services.connectFlows.complete(await consentedCallback(services, upstream, principal, login), BROWSER)
}
