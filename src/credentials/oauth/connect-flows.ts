import { randomBytes, randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import type { Logger } from 'pino'
import type { Principal } from '../../auth/principal.ts'
import type { UpstreamConfig } from '../../config/schema.ts'
import { SwitchboardError, isSwitchboardError } from '../../errors.ts'
import type { OnAuthOutcome } from '../auth-outcome.ts'
import type { CompletedConnect, ConnectFlows, LinkStatus } from '../connect-flows.ts'
import { principalKey, type Grant, type TokenVault, type VaultRecords } from '../vault/token-vault.ts'
import { CONNECT_TTL_MS, type ConnectSigner } from './connect-signing.ts'
import { authorizationUrl, exchangeCode, revokeToken } from './token-requests.ts'
import type { OAuthContexts } from './upstream-oauth.ts'

/** How often `connected` looks for the grant another replica's callback may have stored. */
export const CONNECTED_POLL_MS = 500

export interface ConnectFlowsOptions {
  vault: TokenVault
  records: VaultRecords
  publicUrl: string
  signer: ConnectSigner
  contexts: OAuthContexts
  /** The upstream named so in the current config (reloads change it). */
  upstreams: (name: string) => UpstreamConfig | undefined
  log: Logger
  onOutcome?: OnAuthOutcome | undefined
  /** http.connect.apiKeys in force: with `refuse`, API-key principals are given no link. */
  apiKeys?: () => 'form' | 'refuse'
}

/** The record a state's id names: whose connect it is and what to finish it with. Sealed in the records store. */
interface StateRecord {
  upstream: string
  principalKey: string
  principal: Principal
  elicitationId?: string
  verifier: string
  /** The proven browser that started the flow: only it may complete it. */
  browser: string
}

function refused (why: string): SwitchboardError {
  return new SwitchboardError('SB_ERR_CONNECT_STATE', `the OAuth callback is not valid: ${why}`)
}

function deniedBy (error: string, upstream: string | undefined): SwitchboardError {
  return new SwitchboardError('SB_ERR_CONNECT_DENIED', undefined, { details: { consentRefused: error === 'access_denied', ...(upstream === undefined ? {} : { upstream }) } })
}

function parseRecord (text: string): StateRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<StateRecord>
    if (typeof value.upstream !== 'string' || typeof value.principalKey !== 'string' || typeof value.verifier !== 'string' || typeof value.principal !== 'object' || typeof value.browser !== 'string') return undefined
    return value as StateRecord
  } catch {
    return undefined
  }
}

/** A JWT access token must be meant for the upstream; an opaque one cannot be read and is taken as given. */
function checkAudience (grant: Grant, resource: string, upstreamUrl: string): void {
  let aud: string | string[] | undefined
  try {
    aud = decodeJwt(grant.accessToken.reveal()).aud
  } catch {
    return
  }
  if (aud === undefined) return
  const audiences = Array.isArray(aud) ? aud : [aud]
  const accepted = new Set([resource, upstreamUrl, resource.replace(/\/$/, ''), upstreamUrl.replace(/\/$/, '')])
  if (!audiences.some(a => accepted.has(a))) {
    throw new SwitchboardError('SB_ERR_UPSTREAM_TOKEN', 'the authorization server issued an access token for another audience than the upstream')
  }
}

/** The record that says a link was spent (the link's id is the elicitation id it answers). */
function spentKey (elicitationId: string): string {
  return `link:${elicitationId}`
}

export function createConnectFlows (options: ConnectFlowsOptions): ConnectFlows {
  const { vault, records, signer, contexts, log } = options
  const base = options.publicUrl.replace(/\/+$/, '')

  const oauthUpstream = (name: string): UpstreamConfig => {
    const upstream = options.upstreams(name)
    if (upstream?.auth?.type !== 'oauth') throw new SwitchboardError('SB_ERR_UPSTREAM_AUTH', `upstream ${name} has no per-user OAuth`)
    return upstream
  }

  const complete = async (query: URLSearchParams, browser: string | undefined): Promise<CompletedConnect> => {
    // The authorization server's own refusal (RFC 6749 §4.1.2.1): its words are not taken, they are not ours to vouch for.
    const error = query.get('error')
    const state = query.get('state')
    if (state === null) throw error === null ? refused('it has no state') : deniedBy(error, undefined)
    const id = signer.stateId(state)
    if (id === undefined) throw error === null ? refused('its state was not issued by this gateway') : deniedBy(error, undefined)
    const text = await records.take(`state:${id}`)
    if (text === undefined) throw refused('its state is unknown, used or expired')
    const record = parseRecord(text)
    if (record === undefined) throw refused('its state record is unreadable')
    // Taken all the same: a state carried to another browser (the mirror of a forwarded link) is spent, never retried.
    if (browser !== record.browser) {
      throw new SwitchboardError('SB_ERR_CONNECT_IDENTITY', `the OAuth callback for upstream ${record.upstream} came to a browser that did not start that connect`, { details: { upstream: record.upstream } })
    }
    if (error !== null) throw deniedBy(error, record.upstream)
    // The callback URL is shared by every upstream: the record, never the caller, says which one and whose.
    const upstream = options.upstreams(record.upstream)
    if (upstream?.auth?.type !== 'oauth' || upstream.url === undefined) throw refused(`upstream ${record.upstream} no longer has per-user OAuth`)
    const context = await contexts(upstream)
    let grant: Grant
    try {
      grant = await exchangeCode(context, query, state, context.redirectUri, record.verifier, context.resource)
      checkAudience(grant, context.resource, upstream.url)
    } catch (err: unknown) {
      if (isSwitchboardError(err, 'SB_ERR_UPSTREAM_TOKEN')) throw new SwitchboardError(err.code, err.message, { details: { ...err.details, upstream: record.upstream } })
      throw err
    }
    await vault.put({ upstream: record.upstream, principal: record.principalKey }, grant)
    return { upstream: record.upstream, principal: record.principal, elicitationId: record.elicitationId }
  }

  return {
    offers: (upstream) => options.upstreams(upstream)?.auth?.type === 'oauth',

    linkFor: async (upstream, principal) => {
      oauthUpstream(upstream)
      if (principal.via === 'api-key' && options.apiKeys?.() === 'refuse') throw new SwitchboardError('SB_ERR_CONNECT_REFUSED', undefined, { details: { upstream } })
      const elicitationId = randomUUID()
      const link = await signer.signLink({ upstream, principal, elicitationId })
      return { url: `${base}/connect/${encodeURIComponent(upstream)}?link=${link}`, elicitationId }
    },

    readLink: async (upstream, link): Promise<LinkStatus> => {
      const reading = await signer.readLink(link)
      if (reading.status !== 'valid') return reading
      const { claims, expiresAt } = reading
      if (claims.upstream !== upstream) return { status: 'invalid' }
      if (await records.get(spentKey(claims.elicitationId)) !== undefined) return { status: 'used' }
      return { status: 'valid', upstream, principal: claims.principal, elicitationId: claims.elicitationId, expiresAt }
    },

    // Kept until the link expires: past that the signature alone refuses it.
    spendLink: async (link) => await records.claim(spentKey(link.elicitationId), link.upstream, Math.max(1, link.expiresAt - Date.now())),

    authorizationUrl: async (name, principal, browser, elicitationId) => {
      const context = await contexts(oauthUpstream(name))
      const id = randomBytes(24).toString('base64url')
      const verifier = oauth.generateRandomCodeVerifier()
      const record: StateRecord = { upstream: name, principalKey: principalKey(principal), principal, verifier, browser }
      if (elicitationId !== undefined) record.elicitationId = elicitationId
      await records.set(`state:${id}`, JSON.stringify(record), CONNECT_TTL_MS)
      return await authorizationUrl(context, {
        redirectUri: context.redirectUri, state: signer.signState(id), codeVerifier: verifier, resource: context.resource, scopes: context.scopes
      })
    },

    complete,

    connected: async (upstream, principal, signal) => {
      const key = { upstream, principal: principalKey(principal) }
      // Bounded by the signal: the caller gives up (client cancelled, the elicitation timed out).
      for (;;) {
        signal.throwIfAborted()
        try {
          if (await vault.get(key) !== undefined) return
        } catch (err: unknown) {
          log.warn({ err, upstream }, 'token vault unreadable while waiting for a connect; trying again')
        }
        await sleep(CONNECTED_POLL_MS, undefined, { signal })
      }
    },

    disconnect: async (name, principal) => {
      const key = { upstream: name, principal }
      const grant = await vault.get(key)
      if (grant === undefined) return await vault.delete(key)
      const upstream = options.upstreams(name)
      if (upstream?.auth?.type === 'oauth') {
        try {
          const context = await contexts(upstream)
          const revoked = grant.refreshToken !== undefined
            ? await revokeToken(context, grant.refreshToken, 'refresh_token')
            : await revokeToken(context, grant.accessToken, 'access_token')
          if (revoked) options.onOutcome?.(name, 'oauth', 'revoked')
        } catch (err: unknown) {
          // Forgotten all the same: the user asked to disconnect, and the grant lapses at the server.
          log.warn({ err, upstream: name }, 'revocation at the authorization server failed; forgetting the grant anyway')
        }
      }
      await vault.delete(key)
      return true
    },

    list: async (principal) => await vault.list(principal === undefined ? undefined : { principal })
  }
}
