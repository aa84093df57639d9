import { ANONYMOUS, isSamePrincipal, type Principal } from '../auth/principal.ts'
import type { GatewayConfig } from '../config/schema.ts'
import { principalKey } from '../credentials/vault/token-vault.ts'
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

/** Where the gateway has seen a principal that the config does not name. */
export interface PrincipalEvidence {
  /** The sessions open on this replica. */
  sessions: () => Iterable<{ readonly principal: Principal }>
  /** The upstream grants stored for a principal key (the connect flow); absent: none are kept. */
  grants?: ((principalKey: string) => Promise<readonly unknown[]>) | undefined
}

/**
 * Whether the gateway knows `principal`: API-key principals (principalFor makes only configured
 * ones) and anonymous always; a JWT subject when a session of it is open here or an upstream grant
 * of it is stored. A subject that merely could exist (any JWT `sub`) is not known.
 */
export async function isKnownPrincipal (principal: Principal, evidence: PrincipalEvidence): Promise<boolean> {
  if (principal.via !== 'jwt') return true
  for (const session of evidence.sessions()) if (isSamePrincipal(session.principal, principal)) return true
  if (evidence.grants === undefined) return false
  return (await evidence.grants(principalKey(principal))).length > 0
}
