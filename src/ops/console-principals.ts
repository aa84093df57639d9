import { ANONYMOUS, type Principal } from '../auth/principal.ts'
import type { GatewayConfig } from '../config/schema.ts'
import type { AdminPrincipalView } from './console-views.ts'

/** The principals the config names (its API keys' ids and roles, never a key); with no auth section, anonymous. */
export function principalsOf (auth: GatewayConfig['auth']): AdminPrincipalView[] {
  if (auth === undefined) return [{ id: ANONYMOUS.id, roles: [], via: 'none' }]
  return auth.apiKeys.map(k => ({ id: k.id, roles: [...k.roles], via: 'api-key' as const }))
}

/**
 * The principal a console acts as: an API key's (its configured roles), anonymous without auth, or,
 * with JWT configured, any other id with the roles given (a token would carry them). undefined: none.
 */
export function principalFor (auth: GatewayConfig['auth'], id: string, roles: readonly string[] = []): Principal | undefined {
  if (auth === undefined) return id === ANONYMOUS.id ? ANONYMOUS : undefined
  const key = auth.apiKeys.find(k => k.id === id)
  if (key !== undefined) return { id: key.id, roles: [...key.roles], via: 'api-key' }
  if (auth.jwt !== undefined && id !== '') return { id, roles: [...roles], via: 'jwt' }
  return undefined
}
