import type { GatewayConfig } from '../config/schema.ts'
import { mirroredParams } from '../protocol/modern.ts'
import { InputBridge } from '../session/input-bridge.ts'
import { type StatelessDeps, resumeHere } from '../session/stateless.ts'
import { type Gateway, SERVER_INFO } from './gateway.ts'

/**
 * What serving 2026-07-28 clients needs. With shared sessions, a retry that lands on another
 * replica than its call is forwarded there over the session store's bus.
 */
export function createStatelessDeps (gateway: Gateway, inputRequired: GatewayConfig['http']['inputRequired']): StatelessDeps {
  const store = gateway.sessionStore
  const router = gateway.router
  const deps: StatelessDeps = {
    dispatcher: gateway.dispatcher,
    sessions: gateway.sessions,
    pool: gateway.pool,
    serverInfo: SERVER_INFO,
    mirroredParams: (tool) => mirroredParams(gateway.catalogs.tools.resolve(tool)?.definition),
    bridge: new InputBridge({ ...inputRequired, replica: store.replica }),
    router,
    listens: new Set(),
    limits: gateway.limits,
    metrics: gateway.metrics
  }
  router?.serve('retry', async (request, principal, send, gone) => await resumeHere(deps, request, principal, send, gone))
  return deps
}
