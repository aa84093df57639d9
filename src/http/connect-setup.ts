import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { GatewayConfig } from '../config/schema.ts'
import { createBrowserProof } from '../credentials/browser/browser-proof.ts'
import { AUDITED_OUTCOMES, type OnConnectEvent } from '../credentials/browser/connect-outcome.ts'
import { publicUrlOf } from '../credentials/create-identity.ts'
import { createKeyDeriver } from '../credentials/oauth/connect-signing.ts'
import type { Gateway } from '../gateway/gateway.ts'
import type { AuthHook } from './auth-routes.ts'
import { connectRoutes } from './connect-routes.ts'

/**
 * The connect routes with what they need beside the flow: the browser proof (keys derived from
 * tokens.encryptionKey, so every replica opens every other's cookies), and each step counted in
 * switchboard_connect_flows_total and, when it completed or was refused, written to the audit log.
 */
export async function registerConnectRoutes (app: FastifyInstance, gateway: Gateway, config: GatewayConfig, authHook: AuthHook, log: Logger): Promise<void> {
  const connect = gateway.connect
  if (connect === undefined) return
  const base = publicUrlOf(config)
  const proof = createBrowserProof({
    keys: createKeyDeriver(config.tokens?.encryptionKey),
    auth: () => gateway.config.auth,
    connect: () => gateway.config.http.connect,
    redirectUri: `${base}/connect/signin/callback`
  })
  const audit = log.child({ component: 'audit' })
  const onEvent: OnConnectEvent = ({ upstream, outcome, principal }) => {
    gateway.metrics.connectFlows.inc({ upstream, outcome })
    if (!AUDITED_OUTCOMES.has(outcome) || !gateway.config.audit.enabled) return
    audit.info({ event: 'connect', upstream, outcome, ...principal === undefined ? {} : { principal: principal.id, via: principal.via } }, 'connect')
  }
  await app.register(connectRoutes, {
    flows: connect.flows,
    proof,
    authHook,
    clientMetadata: connect.options.clientMetadata,
    publicUrl: base,
    onEvent
  })
}
